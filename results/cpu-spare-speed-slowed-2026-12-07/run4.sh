#!/usr/bin/env bash
# After run3.sh (stopped after 1.30 x as is: SLOW=1.30 had missed, so 1.40 would tell nothing): the slowed tip
# between 1.20 and 1.30 (SLOW=1.25; SLOW=1.20 on another draw), and 1.10 x the rate as is.
set -u
study=results/cpu-spare-speed-tiny-llama-2026-12-07/study
out=results/cpu-spare-speed-slowed-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "slow 1.25 31" "slow 1.20 32" "rate 1.10 31"; do
  read -r kind f seed <<< "$run"
  echo "[$(date -u +%T)] === $kind $f seed $seed"
  if [ "$kind" = rate ]; then
    SEED=$seed bash scripts/cpu-crosscheck.sh "$study" "$f" 120 "$out/run4-rate${f}x-seed$seed.json"
  else
    SLOW=$f SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/run4-slow${f}-seed$seed.json"
  fi
done
echo "[$(date -u +%T)] all done"
