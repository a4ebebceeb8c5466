#!/bin/bash
cd /tmp/xc
export VLLM_CPU_KVCACHE_SPACE=1
git log -1 --format='code %h'; date -u
for seed in 91 92 93; do
  SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh results/cpu-paced-defaults-smollm2-2026-12-06 1.0 180 \
    /tmp/xc-out/crosscheck-vllm-bench-1.0x-seed$seed.json > /tmp/xc-out/crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
