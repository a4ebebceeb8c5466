#!/usr/bin/env bash
# Issue #6 on the GPU: an exhaustive grid on the H200, compared with a committed tune study (no new search).
# Runs there, from the repo root, after vLLM 0.26.0 was brought over (../shared/gpu/README.md):
#   bash scripts/gpu/h200-grid.sh a30|h200 TIME_BUDGET_S HARD_LIMIT_S
# The grid (max_num_seqs 128/256/512/1024 x KV cache 16-bit/fp8, everything else vLLM's defaults for the
# target) is measured exactly as scripts/gpu/h200-study.sh measures a trial, and compared with
# results/h200-llama-3-8b-<target>/. Points land in results/grid-h200-llama-3-8b-<target>/grid.jsonl as they
# finish, so the grid spreads over calls (and sessions: commit what comes back in $OUT/grid-<target>.tgz).
set -euo pipefail
target="${1:?usage: h200-grid.sh a30|h200 TIME_BUDGET_S HARD_LIMIT_S}"
budget="${2:-540}"
hard="${3:-570}"
source scripts/gpu/h200-env.sh
source scripts/gpu/h200-grid-args.sh
args=("${grid_args[@]}" --grid kv_cache_dtype=auto,fp8 --out "$out" --time-budget "$budget")
set +e
timeout --signal=INT --kill-after=30 "$hard" python3 bench/search_vs_grid.py "${args[@]}" 2>&1 | tee "/tmp/grid-$target.log"
rc=${PIPESTATUS[0]}
set -e
echo "grid exit code: $rc (3: unfinished, run again)"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$out" && tail -c 2000000 "/tmp/grid-$target.log" > "$out/grid.log"
  tar -czf "$OUT/grid-$target.tgz" -C "$out" grid.jsonl grid.log 2>/dev/null || tar -czf "$OUT/grid-$target.tgz" -C "$out" grid.log
  save_compile_caches
fi
