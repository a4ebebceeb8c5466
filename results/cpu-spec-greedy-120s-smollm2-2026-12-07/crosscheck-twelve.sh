#!/usr/bin/env bash
# Twelve more two-minute draws of the winner's certified 2.799 req/s under `vllm bench serve`, seeds 85-96, each on a
# fresh server (scripts/cpu-crosscheck.sh): to bound the miss chance of another two-minute draw tighter than 8 of 8 did.
# From a clean clone CODE, under the CPU lock:   flock /tmp/slotune-cpu.lock bash crosscheck-twelve.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in $(seq 85 96); do
  date -u
  SEED=$seed PORT=18176 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-winner-seed$seed.json"
  echo "winner 120 s seed $seed exit $?"
done
date -u
