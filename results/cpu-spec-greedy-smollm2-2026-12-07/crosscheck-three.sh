#!/usr/bin/env bash
# study/'s certified 3.245 req/s under vLLM's own client (scripts/cpu-crosscheck.sh, bench/vllm_bench_check.py:
# the workload's temperature 0 is passed as --temperature): the winner (trial 1, ngram k=3), vLLM's defaults (trial 0)
# and the winner's twin without speculation (trial 2), interleaved, each on a fresh launch.sh server for 120 s,
# seeds 71 and 72 (SEEDS="73": a third). From a clean clone CODE, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash crosscheck-three.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in ${SEEDS:-71 72}; do
  date -u
  SEED=$seed PORT=18161 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-winner-seed$seed.json"
  echo "winner seed $seed exit $?"; date -u
  SEED=$seed PORT=18162 TRIAL=0 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-defaults-seed$seed.json"
  echo "defaults seed $seed exit $?"; date -u
  SEED=$seed PORT=18163 TRIAL=2 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-twin-seed$seed.json"
  echo "twin seed $seed exit $?"
done
date -u
