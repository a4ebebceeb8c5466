#!/usr/bin/env bash
# h200-grid.sh on a host with two H200s: the grid's points still missing from grid.jsonl are measured two at a
# time, one vLLM server per GPU (CUDA_VISIBLE_DEVICES), each exactly as h200-grid.sh measures a point.
#   bash scripts/gpu/h200-grid-x2.sh a30|h200 TIME_BUDGET_S HARD_LIMIT_S
# GPU 0 takes the 16-bit-KV points, GPU 1 the fp8 ones (on_two_gpus in h200-grid-args.sh). At the end the new
# rows are merged into results/grid-h200-llama-3-8b-<target>/grid.jsonl (and into $OUT/grid.jsonl) and, when
# the grid is complete, compared with the committed study as h200-grid.sh does.
set -euo pipefail
target="${1:?usage: h200-grid-x2.sh a30|h200 TIME_BUDGET_S HARD_LIMIT_S}"
budget="${2:-540}"
hard="${3:-570}"
source scripts/gpu/h200-env.sh
source scripts/gpu/h200-grid-args.sh
work="${OUT:-/tmp/grid-x2}"
worker_args() { echo --grid kv_cache_dtype=$([ "$1" = 0 ] && echo auto || echo fp8) --time-budget "$budget"; }
on_two_gpus grid.log "$hard" "^\[grid|budget"   # exit code 3: unfinished, run again
# merge: the rows already in grid.jsonl, then each worker's new ones (a point is keyed by its settings)
python3 - "$out/grid.jsonl" "$work/gpu0/grid.jsonl" "$work/gpu1/grid.jsonl" <<'EOF'
import json, sys
rows = {}
for path in sys.argv[1:]:
    for line in open(path).read().splitlines():
        row = json.loads(line)
        rows.setdefault(json.dumps(row["point"], sort_keys=True), row)
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows.values())
print(f"grid.jsonl: {len(rows)} points")
EOF
[ -n "${OUT:-}" ] && cp "$out/grid.jsonl" "$OUT/grid.jsonl"
# all points measured: the comparison (no server is started when nothing is left to measure)
n=$(wc -l < "$out/grid.jsonl")
if [ "$n" -ge 8 ]; then
  python3 bench/search_vs_grid.py "${grid_args[@]}" --grid kv_cache_dtype=auto,fp8 --out "$out" 2>&1 \
    | tee "$work/compare.log" | tail -8
fi
