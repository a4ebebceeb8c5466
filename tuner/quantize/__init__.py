"""4-bit AWQ quantization with a quality gate (docs/quantize.md); the pipeline's step is tuner.quantize_step.

In slotune's interpreter (the parent):
    api.py          quantize(), QuantizeResult, QualityGateError: validate, cache, run, judge
    recipe.py       QuantizeRecipe and the calibration texts (built-in, or the user's JSONL)
    gate.py         GateThresholds, QualityReport, judge (pure): the verdict on the worker's measurements
    groups.py       the group size per model (128, else 64, else 32) and the layers kept 16-bit
    cache.py        the cache key, the model fingerprint and the finished-output manifest
    interpreter.py  finding the quantization interpreter, checking its backend, running the worker
    setup.py        ``tune quantize --setup``: the pinned llm-compressor venv
    text.py         the built-in calibration and held-out text (stdlib; the worker uses it too)

In the quantization interpreter (``python -m tuner.quantize.worker``; torch, transformers, the backend):
    worker.py       the subprocess: reference, quantize with restoration, save, reload and measure
    metrics.py      log-prob comparisons, per-layer cosines, the damage test seam
    llmc.py         the llm-compressor backend (default)
    awq.py          the AutoAWQ backend (deprecated)

This file imports nothing: the worker's interpreter runs it before ``worker.py``.
"""
