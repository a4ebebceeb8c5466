# Sourced by the H200 grid scripts after h200-env.sh, with $target set (a30|h200): the grid's folder ($out) and
# the arguments every bench/search_vs_grid.py call of that grid shares ($grid_args: measured exactly as the
# committed study results/h200-llama-3-8b-$target/, which it is compared with); each script adds its own
# --grid kv_cache_dtype=…, --out and limits.
# SEARCH=a30-w4a16 compares with that study instead (same GPU profile and measurement; its best may be the 4-bit
# variant, written by h200-env.sh's w4a16_model).
out="results/grid-h200-llama-3-8b-$target"
search="${SEARCH:-$target}"
grid_args=(--model "$model" --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms" --level-seconds 8
           --gpu "$target" --search-from "results/h200-llama-3-8b-$search" --grid max_num_seqs=128,256,512,1024)
[ "$search" != "${search%-w4a16}" ] && w4a16_model
[ "$target" = a30 ] && grid_args+=(--emulate-on auto)

# bench/search_vs_grid.py on GPUs 0 and 1 at once; waits for both. Worker g: CUDA_VISIBLE_DEVICES=g, its own HOME
# (a precaution against two cold compiles writing one cache; SHARE_HOME=1 keeps the caller's, whose compile caches
# an earlier call on this machine filled: vLLM 0.26 with torch 2.11 writes compile artifacts atomically, and warm
# startups take ~60 s instead of ~200), --out $work/gpu<g> seeded with grid.jsonl (what a killed call
# finished still comes back under $OUT), then the arguments the caller's `worker_args g` prints; its console
# goes to $work/gpu<g>/LOG_NAME, whose lines matching PATTERN are shown at the end.
#   on_two_gpus LOG_NAME HARD_LIMIT_S PATTERN
on_two_gpus() {
  local log=$1 hard=$2 pattern=$3 g pids=()
  touch "$out/grid.jsonl"
  for g in 0 1; do
    mkdir -p "$work/gpu$g" "/tmp/home-gpu$g"
    cp "$out/grid.jsonl" "$work/gpu$g/grid.jsonl"
    # shellcheck disable=SC2046  # worker_args prints plain words
    ( export CUDA_VISIBLE_DEVICES=$g
      [ -n "${SHARE_HOME:-}" ] || export HOME=/tmp/home-gpu$g
      rc=0
      timeout --signal=INT --kill-after=30 "$hard" python3 bench/search_vs_grid.py "${grid_args[@]}" \
        $(worker_args $g) --out "$work/gpu$g" > "$work/gpu$g/$log" 2>&1 || rc=$?
      echo "gpu$g exit code: $rc" >> "$work/gpu$g/$log" ) &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  for g in 0 1; do
    echo "--- gpu$g"
    grep -E "$pattern|exit code|Traceback|Error" "$work/gpu$g/$log" | grep -v "vLLM starting" | cut -c1-250 | tail -12
  done
}
