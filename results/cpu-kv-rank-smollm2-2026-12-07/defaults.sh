#!/bin/bash
# The plan's "if time is left": vLLM's defaults (calibrated on; outside G1) at 0.9 x and 1.1 x their in-sample
# prediction (2.004), fresh launch.sh servers, 150 s each; the rule's one extra step. Under the CPU lock.
set -u
cd /tmp/kvs/code
d=/tmp/kvs/out/defaults; mkdir -p $d
held() { python3 -c "import json,sys; print('held' if json.load(open(sys.argv[1])).get('held') else 'missed')" "$1" 2>/dev/null || echo none; }
for r in 1.804 2.204; do date -u; RATE=$r bash scripts/cpu-crosscheck.sh /tmp/kvs/out/study 1.0 150 $d/bench-$r.json; echo "exit $?"; done
a=$(held $d/bench-1.804.json) b=$(held $d/bench-2.204.json); echo "== defaults: 1.804 $a, 2.204 $b"
extra=""; [ "$a $b" = "held held" ] && extra=2.605; [ "$a $b" = "missed missed" ] && extra=1.403
if [ -n "$extra" ]; then RATE=$extra bash scripts/cpu-crosscheck.sh /tmp/kvs/out/study 1.0 150 $d/bench-$extra.json; echo "== defaults: $extra $(held $d/bench-$extra.json)"; fi
date -u
