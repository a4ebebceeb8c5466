"""perfmodel: predict a vLLM configuration's capacity under latency SLOs without launching it.

A step-by-step model of vLLM v1's scheduler (``engine``: continuous batching under ``max_num_seqs`` and
``max_num_batched_tokens``, chunked prefill, KV blocks as ``tuner.budget.kv_budget`` predicts them, prefix-cache hits,
preemption) behind a front end (``server``), fed the requests ``loadtest`` would send (``traffic``), timed
by one engine family's costs (``costs``) fitted to what a launched trial measured (``calibrate``). It
answers what the tuner's capacity search would find (``protocol``, ``capacity``) and ranks candidates
(``rank``). Pure Python (SciPy only to fit); no torch, no vLLM.
"""
