#!/bin/bash
cd /work/main
cat /proc/self/autogroup
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
date -u
T="max_num_seqs=16,enable_chunked_prefill=false,max_model_len=2560,enable_prefix_caching=true,speculative_method=off"
T="$T;max_num_seqs=16,enable_chunked_prefill=true,max_num_batched_tokens=2048,max_model_len=2560,enable_prefix_caching=true,speculative_method=off"
T="$T;max_num_seqs=32,enable_chunked_prefill=false,max_model_len=2560,enable_prefix_caching=true,speculative_method=off"
T="$T;max_num_seqs=32,enable_chunked_prefill=true,max_num_batched_tokens=2048,max_model_len=2560,enable_prefix_caching=true,speculative_method=off"
exec .venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --output-tokens 64 \
  --trials 5 --try-first "$T" --certify each --soak-seconds 60 --out /tmp/capc/study
