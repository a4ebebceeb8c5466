#!/usr/bin/env bash
# After h200-grid(-x2).sh: the grid's best, vLLM's defaults and the study's best measured once more on each of two
# H200s (fresh servers; GPU 0 starts with the grid's best, GPU 1 with the search's best), because one measurement
# per configuration is noisy. Rows land in $OUT/gpu<N>/remeasure.jsonl as each measurement finishes, so a call cut
# short by HARD_LIMIT_S keeps what it finished; a second call with "flip" swaps the two GPUs' orders, so that the
# contenders the first call's limit cut off come first.
#   [SEARCH=a30-w4a16] bash scripts/gpu/h200-remeasure-x2.sh a30|h200 HARD_LIMIT_S [flip]
# SEARCH names another study of the same GPU profile (results/h200-llama-3-8b-$SEARCH) whose best is compared.
set -euo pipefail
target="${1:?usage: h200-remeasure-x2.sh a30|h200 HARD_LIMIT_S}"
hard="${2:-570}"
flip="${3:-}"
source scripts/gpu/h200-env.sh
source scripts/gpu/h200-grid-args.sh
work="${OUT:-/tmp/remeasure-x2}"
worker_args() {  # GPU 1 starts with the search's best (GPU 0 with "flip")
  echo --grid kv_cache_dtype=auto,fp8 --remeasure 1
  if { [ "$1" = 1 ] && [ -z "$flip" ]; } || { [ "$1" = 0 ] && [ -n "$flip" ]; }; then echo --remeasure-search-first; fi
}
on_two_gpus remeasure.log "$hard" "re-measured|healthy"
