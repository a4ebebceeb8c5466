#!/usr/bin/env bash
# The Dec-2 study's winner without speculation (its twin: 128 seqs, 2,048 batched tokens, max length 1,536, no chunked
# prefill, prefix caching; slotune refuses naming batched tokens without chunking) against vLLM's defaults, under today's rules (2026-12-07)
cd /tmp/spec7/code
export PYTHONPATH=/tmp/spec7/code VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
echo "start $(date -u +%FT%TZ) code $(git rev-parse --short HEAD)"
.venv/bin/tune --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 2 \
  --try-first 'max_model_len=1536,max_num_seqs=128,enable_chunked_prefill=false,enable_prefix_caching=true,speculative_method=off' \
  --output-tokens 64 --soak-seconds 60 --out /tmp/spec7/twin
echo "tune exit code $? at $(date -u +%FT%TZ)"
