#!/bin/bash
# the certified 0.833 req/s at 0.9 x (a step below), the same three draws, on the quiet host
cd /tmp/xc
export VLLM_CPU_KVCACHE_SPACE=1
git log -1 --format='code %h'; date -u
for seed in 91 92 93; do
  SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh results/cpu-paced-defaults-smollm2-2026-12-06 0.9 180 \
    /tmp/xc-out3/crosscheck-vllm-bench-0.9x-seed$seed.json > /tmp/xc-out3/crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
