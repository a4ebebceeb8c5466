#!/bin/bash
# After the before/after pair: vllm bench serve at the after-run's estimate (1.0x, 180 s), then the third SmolLM2 rank sitting.
until grep -q 'tune exit' /tmp/lw/after.out 2>/dev/null; do sleep 10; done
cd /tmp/lw/after && ln -sfn /work/main/.venv .venv
win=$(/work/main/.venv/bin/python -c "import json; print(round(json.load(open('/tmp/lw/out-after/best.json'))['best']['best_rate_req_s'], 3))")
echo "after-run estimate: $win"; date -u
flock /tmp/slotune-cpu.lock env RATE=$win bash scripts/cpu-crosscheck.sh /tmp/lw/out-after 1.0 180 /tmp/lw/out-after/crosscheck-vllm-bench-1.0x.json > /tmp/lw/crosscheck-after-1.0.out 2>&1
echo "crosscheck exit $?"; date -u
flock /tmp/slotune-cpu.lock bash /tmp/rkc/run.sh > /tmp/rkc/run.out 2>&1
echo "rank run exit $?"; date -u
