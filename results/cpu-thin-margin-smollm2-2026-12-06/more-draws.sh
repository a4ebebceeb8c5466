#!/bin/bash
# Three more vllm bench serve draws at the stated 1.037 (seeds 97-99), as run.sh's, on the same host; run under the
# CPU lock: setsid nohup flock /tmp/slotune-cpu.lock bash more-draws.sh (CODE /tmp/tm-code, OUT /tmp/tm-out, as run.sh had).
set -u
cd /tmp/tm-code
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/tm-code
date -u
for seed in 97 98 99; do
  SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh /tmp/tm-out 1.0 180 \
    /tmp/tm-out/crosscheck-vllm-bench-1.0x-seed$seed.json > /tmp/tm-out.crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
