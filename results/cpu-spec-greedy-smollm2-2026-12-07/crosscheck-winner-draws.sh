#!/usr/bin/env bash
# After seed 73 missed for all three configurations (crosscheck-three-seed73.out): the winner alone at its certified
# 3.245 req/s, 120 s, each on a fresh launch.sh server: seed 71 again (held at 04:04: has the host slowed?), seed 73
# again (the same draw: does it miss again?), seed 74 (a new draw). From a clean clone CODE, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash crosscheck-winner-draws.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in 71 73 74; do
  date -u
  SEED=$seed PORT=18164 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-winner-again-seed$seed.json"
  echo "winner again seed $seed exit $?"
done
date -u
