#!/usr/bin/env bash
# The certified 2.799 req/s for longer than the soaks that certified it: `vllm bench serve` for 300 s (the soaks
# lasted 120 s), seeds 73 (the heaviest 2-minute draw so far) and 75 (a new one), each on a fresh launch.sh server.
# From a clean clone CODE, under the CPU lock:   flock /tmp/slotune-cpu.lock bash crosscheck-longer.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in ${SEEDS:-73 75}; do
  date -u
  SEED=$seed PORT=18173 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 300 "$here/bench-winner-300s-seed$seed.json"
  echo "vllm bench serve 300 s seed $seed exit $?"
done
date -u
