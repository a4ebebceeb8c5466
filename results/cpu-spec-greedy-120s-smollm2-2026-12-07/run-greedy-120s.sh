#!/usr/bin/env bash
# The edit-greedy study of ../cpu-spec-greedy-smollm2-2026-12-07 again, with the CPU profile's default 120-s soaks
# (that one passed --soak-seconds 60). From a clean clone at /tmp/cpurun, under the CPU lock.
cd /tmp/cpurun
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/cpurun
echo "start $(date -u +%Y-%m-%dT%H:%M:%SZ) code $(git rev-parse --short HEAD)"
.venv/bin/tune --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit-greedy \
  --try-first 'speculative_method=ngram,num_speculative_tokens=3' --trials 2 --output-tokens 64 \
  --certify all --out /tmp/greedy120/out
echo "exit $? at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
