#!/usr/bin/env bash
# Ten-minute draws of the winner's certified 2.799 req/s under `vllm bench serve`, seeds 97 and 98 (SEEDS="99 100": those), each on a
# fresh server (scripts/cpu-crosscheck.sh): does the figure hold twice as long as the 300-s draws did?
# From a clean clone CODE, under the CPU lock:   flock /tmp/slotune-cpu.lock bash crosscheck-ten-minutes.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in ${SEEDS:-97 98}; do
  date -u
  SEED=$seed PORT=18176 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 600 "$here/bench-winner-600s-seed$seed.json"
  echo "winner 600 s seed $seed exit $?"
done
date -u
