# Sourced by the H200 grid scripts after h200-env.sh, with $target set (a30|h200): the grid's folder ($out) and
# the arguments every bench/search_vs_grid.py call of that grid shares ($grid_args: measured exactly as the
# committed study results/h200-llama-3-8b-$target/, which it is compared with); each script adds its own
# --grid kv_cache_dtype=…, --out and limits.
out="results/grid-h200-llama-3-8b-$target"
grid_args=(--model "$model" --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms" --level-seconds 8
           --gpu "$target" --search-from "results/h200-llama-3-8b-$target" --grid max_num_seqs=128,256,512,1024)
[ "$target" = a30 ] && grid_args+=(--emulate-on auto)
