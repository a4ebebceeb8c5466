#!/usr/bin/env bash
# After run2.sh (stopped after its second run: SLOW=1.20 held once the host was not shared, so the tip lies further
# out): the draw as is at 1.0 (today's speed, for bench/spare_speed_today.py), then SLOW=1.30 and 1.40 at the
# certified rate beside 1.30 x and 1.40 x the rate as is.
set -u
study=results/cpu-spare-speed-tiny-llama-2026-12-07/study
out=results/cpu-spare-speed-slowed-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "rate 1.0" "slow 1.30" "rate 1.30" "slow 1.40" "rate 1.40"; do
  read -r kind f <<< "$run"
  echo "[$(date -u +%T)] === $kind $f seed 31"
  if [ "$kind" = rate ]; then
    SEED=31 bash scripts/cpu-crosscheck.sh "$study" "$f" 120 "$out/run3-rate${f}x-seed31.json"
  else
    SLOW=$f SEED=31 bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/run3-slow${f}-seed31.json"
  fi
done
echo "[$(date -u +%T)] all done"
