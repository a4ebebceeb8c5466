#!/bin/bash
# The run's certified winner (trial 5, 64 x 512, 1.316 req/s) under vLLM's own client: `vllm bench serve` at 1.0 x for
# 180 s on fresh launch.sh servers, seeds 71 and 72, on the same host, under the CPU lock:
#   setsid nohup flock /tmp/slotune-cpu.lock bash crosscheck.sh   (CODE /tmp/g24s/code, OUT /tmp/g24s/rank, as run.sh had)
set -u
cd /tmp/g24s/code
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/g24s/code
date -u
for seed in 71 72; do
  SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh /tmp/g24s/rank 1.0 180 \
    /tmp/g24s/rank/crosscheck-vllm-bench-1.0x-seed$seed.json > /tmp/g24s/crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
