#!/usr/bin/env bash
# After h200-grid(-x2).sh: the grid's best, vLLM's defaults and the study's best measured once more on each of two
# H200s (fresh servers; GPU 0 starts with the grid's best, GPU 1 with the search's best), because one measurement
# per configuration is noisy. Rows land in $OUT/gpu<N>/remeasure.jsonl as each measurement finishes, so a call cut
# short by HARD_LIMIT_S keeps what it finished; a second call with "flip" swaps the two GPUs' orders, so that the
# contenders the first call's limit cut off come first.
#   bash scripts/gpu/h200-remeasure-x2.sh a30|h200 HARD_LIMIT_S [flip]
set -euo pipefail
target="${1:?usage: h200-remeasure-x2.sh a30|h200 HARD_LIMIT_S}"
hard="${2:-570}"
flip="${3:-}"
source scripts/gpu/h200-env.sh
source scripts/gpu/h200-grid-args.sh
work="${OUT:-/tmp/remeasure-x2}"
args=("${grid_args[@]}" --grid kv_cache_dtype=auto,fp8 --remeasure 1)
pids=()
for g in 0 1; do
  mkdir -p "$work/gpu$g" "/tmp/home-gpu$g"
  cp "$out/grid.jsonl" "$work/gpu$g/grid.jsonl"
  ( export CUDA_VISIBLE_DEVICES=$g HOME=/tmp/home-gpu$g
    rc=0
    timeout --signal=INT --kill-after=20 "$hard" python3 bench/search_vs_grid.py "${args[@]}" --out "$work/gpu$g" \
      $( ( [ $g = 1 ] && [ -z "$flip" ] ) || ( [ $g = 0 ] && [ -n "$flip" ] ) && echo --remeasure-search-first) > "$work/gpu$g/remeasure.log" 2>&1 || rc=$?
    echo "gpu$g exit code: $rc" >> "$work/gpu$g/remeasure.log" ) &
  pids+=($!)
done
wait "${pids[@]}" || true
for g in 0 1; do echo "--- gpu$g"; grep -E "re-measured|healthy|exit code|Traceback|Error" "$work/gpu$g/remeasure.log" \
  | cut -c1-250 | tail -12; done
