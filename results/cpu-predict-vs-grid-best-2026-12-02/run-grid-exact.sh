#!/bin/bash
# G2 on the CPU: the committed grid's four best points (its own ranking), each with every other knob at vLLM's
# default (max_model_len 4096 = the model's, chunked prefill and prefix caching on, no speculation: --try-first
# names every knob of the space, so the sampler picks none), certified beside the defaults by the protocol of
# results/cpu-predict-vs-grid-best-2026-12-02 (steady levels, --certify each, 60-s soaks).
cd /work/main
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
rest="max_model_len=4096,enable_chunked_prefill=true,enable_prefix_caching=true,speculative_method=off"
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat \
  --trials 5 --try-first "max_num_seqs=256,max_num_batched_tokens=2048,$rest;max_num_seqs=256,max_num_batched_tokens=512,$rest;max_num_seqs=64,max_num_batched_tokens=2048,$rest;max_num_seqs=256,max_num_batched_tokens=8192,$rest" \
  --certify each --soak-seconds 60 --out /tmp/g2c/grid4 > /tmp/g2c/grid4.log 2>&1
echo "grid4 tune exit $?"; date -u
