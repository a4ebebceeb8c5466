#!/usr/bin/env bash
# Both configurations of fresh/ at its best's certified 19.856 req/s under vLLM's own client (scripts/cpu-crosscheck.sh),
# interleaved best, defaults, best, defaults, each on a fresh launch.sh server for 120 s, seeds 91 and 92. From a
# clean clone CODE, under the CPU lock:  flock /tmp/slotune-cpu.lock bash crosscheck-pairs.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in 91 92; do
  date -u
  SEED=$seed PORT=18141 bash scripts/cpu-crosscheck.sh "$here/fresh" 1.0 120 "$here/bench-best-seed$seed.json"
  echo "best seed $seed exit $?"; date -u
  SEED=$seed PORT=18142 TRIAL=0 bash scripts/cpu-crosscheck.sh "$here/fresh" 1.0 120 "$here/bench-defaults-seed$seed.json"
  echo "defaults seed $seed exit $?"
done
date -u
