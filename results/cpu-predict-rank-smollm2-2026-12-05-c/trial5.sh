#!/bin/bash
# After run.sh: trial 5 (512 x 2048, search estimate 2.11) under vllm bench serve at the winner's 2.685 for 180 s,
# on a fresh server started by bench/trial_launch.py's launch.sh (scripts/cpu-crosscheck.sh TRIAL=5).
until grep -q 'cross-check 1.0x exit' /tmp/rkc/run.out 2>/dev/null; do sleep 5; done
cd /tmp/rkc/code && date -u
flock /tmp/slotune-cpu.lock env TRIAL=5 RATE=2.685 bash scripts/cpu-crosscheck.sh /tmp/rkc/rank 1.0 180
echo "trial 5 cross-check exit $?"; date -u
