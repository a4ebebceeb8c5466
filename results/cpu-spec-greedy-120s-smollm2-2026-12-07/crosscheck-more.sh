#!/usr/bin/env bash
# Two more checks, each on a fresh server: the winner's certified 2.799 req/s for 300 s on seeds 76 and 77 (more
# windows longer than the soaks), and ngram's own certified 2.683 (trial 1, served by bench/trial_launch.py as the
# study renders launch.sh) for 120 s on seeds 73 and 74, the draws that sank the 60-s study's 3.245.
# From a clean clone CODE, under the CPU lock:   flock /tmp/slotune-cpu.lock bash crosscheck-more.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
for seed in 76 77; do
  date -u
  SEED=$seed PORT=18174 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 300 "$here/bench-winner-300s-seed$seed.json"
  echo "winner 300 s seed $seed exit $?"
done
for seed in 73 74; do
  date -u
  TRIAL=1 RATE=2.6834551790786656 SEED=$seed PORT=18175 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 \
    "$here/bench-ngram-certified-seed$seed.json"
  echo "ngram at its certified 2.683, seed $seed exit $?"
done
date -u
