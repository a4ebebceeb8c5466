#!/usr/bin/env bash
# twin/'s certified 1.789 req/s (vLLM's defaults) under vLLM's own client (scripts/cpu-crosscheck.sh), and the 12-02
# winner's twin (trial 1) at the same rate: interleaved defaults, twin, defaults, twin, each on a fresh launch.sh server
# for 120 s, seeds 61 and 62. From a clean clone CODE, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash crosscheck-pairs.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in 61 62; do
  date -u
  SEED=$seed PORT=18151 bash scripts/cpu-crosscheck.sh "$here/twin" 1.0 120 "$here/bench-defaults-seed$seed.json"
  echo "defaults seed $seed exit $?"; date -u
  SEED=$seed PORT=18152 TRIAL=1 bash scripts/cpu-crosscheck.sh "$here/twin" 1.0 120 "$here/bench-twin-seed$seed.json"
  echo "twin seed $seed exit $?"
done
date -u
