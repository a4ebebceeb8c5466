#!/usr/bin/env bash
# A second sitting (after the e2e test and CI): the model's own figure before the cap, 15 % slower, on two draws; the
# tip's other side, x1.25, on a second draw; and the draw as is, for this sitting's speed.
set -u
study=results/cpu-spare-speed-tiny-llama-2026-12-07/study
out=results/cpu-spare-speed-slowed-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "rate 1.0 32" "slow 1.15 31" "slow 1.15 32" "slow 1.25 32"; do
  read -r kind f seed <<< "$run"
  echo "[$(date -u +%T)] === $kind $f seed $seed"
  if [ "$kind" = rate ]; then
    SEED=$seed bash scripts/cpu-crosscheck.sh "$study" "$f" 120 "$out/run5-rate${f}x-seed$seed.json"
  else
    SLOW=$f SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/run5-slow${f}-seed$seed.json"
  fi
done
echo "[$(date -u +%T)] all done"
