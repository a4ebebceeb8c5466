#!/usr/bin/env bash
# The SmolLM2 speculation study of 2026-12-02 again, from scratch, under today's rules (2026-12-07)
cd /tmp/spec7/code
export PYTHONPATH=/tmp/spec7/code VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
echo "start $(date -u +%FT%TZ) code $(git rev-parse --short HEAD)"
.venv/bin/tune --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 2 \
  --try-first speculative_method=ngram,num_speculative_tokens=3 --output-tokens 64 --soak-seconds 60 --out /tmp/spec7/out
echo "tune exit code $? at $(date -u +%FT%TZ)"
