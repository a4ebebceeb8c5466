#!/bin/bash
# Phase 3 driver: each configuration at 0.9 x and 1.1 x its phase-2 prediction (predictions.txt: the engine-TTFT calibration's), then the rule's one
# extra step (1.3 x where both held, 0.7 x where both missed). CODE needs .venv (main's, linked). Under the CPU lock:  bash run3.sh CODE OUT [NAME ...]
set -u
code=$1 out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
names=("$@"); [ ${#names[@]} -eq 0 ] && names=(f-512batch g-32x-kv12288 h-64x1024-kv7168 i-noprefix-kv4096)
held() { python3 -c "import json,sys; print('held' if json.load(open(sys.argv[1])).get('held') else 'missed')" "$1" 2>/dev/null || echo none; }
for n in "${names[@]}"; do
  pred=$(sed -n "s/^$n: predicted \([0-9.]*\) req\/s.*/\1/p" "$out/predictions.txt")
  lo=$(python3 -c "print(round(0.9*$pred,3))") hi=$(python3 -c "print(round(1.1*$pred,3))")
  echo "== $n predicted $pred: $lo and $hi"
  bash "$here/phase3.sh" "$code" "$out" "$n" "$lo" "$hi"
  a=$(held "$out/$n/bench-$lo.json") b=$(held "$out/$n/bench-$hi.json")
  echo "== $n: $lo $a, $hi $b"
  case "$a $b" in *none*) echo "== $n: a run measured nothing; stopping"; exit 2;; esac
  extra=""
  [ "$a $b" = "held held" ] && extra=$(python3 -c "print(round(1.3*$pred,3))")
  [ "$a $b" = "missed missed" ] && extra=$(python3 -c "print(round(0.7*$pred,3))")
  if [ -n "$extra" ]; then
    bash "$here/phase3.sh" "$code" "$out" "$n" "$extra"
    echo "== $n: $extra $(held "$out/$n/bench-$extra.json")"
  fi
done
date -u
