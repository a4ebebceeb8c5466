#!/usr/bin/env bash
# The rank study's defaults (trial 0) and winner (trial 5) at one rate, each run on its own fresh server, with either
# client (../cpu-longer-hold-smollm2-2026-12-06/tally.sh: slotune's `loadtest`, or `vllm bench serve`), in the order
# given: PAIRS="TRIAL:TOOL:RATE:SEED ...". From the repo root under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash results/cpu-defaults-vs-winner-smollm2-2026-12-06/pairs.sh OUT SECONDS
set -u
out=$1 secs=$2 study=results/cpu-predict-rank-smollm2-2026-12-06/rank
for pair in $PAIRS; do
  IFS=: read -r trial tool rate seed <<< "$pair"
  TRIAL=$trial RUNS="$tool:$rate:$seed" bash results/cpu-longer-hold-smollm2-2026-12-06/tally.sh "$study" \
    "$out/trial$trial-$tool-$rate-seed$seed" "$rate" "$secs"
done
