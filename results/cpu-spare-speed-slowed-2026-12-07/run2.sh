#!/usr/bin/env bash
# After run.sh (stopped after its fourth run), in the same sitting: the same draw (seed 31) as is at higher rates,
# beside the slowed runs at the certified rate. A host f times slower serves rate r as this one serves f x r (the
# spare speed's cap rests on it): SLOW=F at 1.0 x the rate against F x the rate as is. SLOW=1.20 again first (the
# first one shared the host: `others` 0.23 cores). Then the draw as is at 1.0. No probes (run.sh's told little).
set -u
study=results/cpu-spare-speed-tiny-llama-2026-12-07/study
out=results/cpu-spare-speed-slowed-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "slow 1.20" "rate 1.20" "rate 1.10" "slow 1.15" "rate 1.15" "rate 1.0"; do
  read -r kind f <<< "$run"
  echo "[$(date -u +%T)] === $kind $f seed 31"
  if [ "$kind" = rate ]; then
    SEED=31 bash scripts/cpu-crosscheck.sh "$study" "$f" 120 "$out/run2-rate${f}x-seed31.json"
  else
    SLOW=$f SEED=31 bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/run2-slow${f}-seed31.json"
  fi
done
echo "[$(date -u +%T)] all done"
