#!/usr/bin/env bash
# Issue #24: grid points on the H200 measured with every level kept (bench/search_vs_grid.py stores each point's
# TrialResult, vLLM's /metrics per level included), so perfmodel can replay them level by level. The set-up of
# results/h200-llama-3-8b-a30-predict-2026-12-02-b-each: the A30's memory emulated, Llama-3-8B shape with random
# weights, `chat`, ttft_p95=2s,tpot_p95=60ms, 8-s levels. Runs there from the repo root:
#   bash scripts/gpu/h200-points.sh HARD_LIMIT_S
# Each call stages the part it carried (h200-stage.sh); once vLLM is unpacked, it measures the points not yet in
# /tmp/keep-points/grid.jsonl (the grid resumes there between calls on one machine), starting none with less
# than POINT_MIN_S (default 330) seconds left, and packs grid.jsonl, the console and vLLM's stats lines into
# $OUT/<KEEP's name>.tgz.
# POINTS: the grid, "KNOB=v1,v2 KNOB=v ..." (every combination); unset, run b's capped auto-KV pick (point-63)
# against its chunked and 256-sequence variants; empty (POINTS=""), one point: vLLM's defaults. KEEP: the grid's
# folder on the machine (default /tmp/keep-points), so that another grid in the same calls starts apart.
set -uo pipefail
hard="${1:-560}"
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[h200-points $(el)s $(date -u +%H:%M:%SZ)] $*"; }
source scripts/gpu/h200-stage.sh
stage_vllm || exit 0
source scripts/gpu/h200-env.sh
export VLLM_LOG_STATS_INTERVAL="${VLLM_LOG_STATS_INTERVAL:-2}"  # vLLM's running/waiting/KV lines every 2 s
keep="${KEEP:-/tmp/keep-points}"
mkdir -p "$keep"
points="${POINTS-max_num_seqs=128,256 enable_chunked_prefill=false,true max_num_batched_tokens=5120 max_model_len=5120 enable_prefix_caching=true kv_cache_dtype=auto gpu_memory_utilization=0.92}"
grid_args=(); for kv in $points; do grid_args+=(--grid "$kv"); done
left=$(( hard - $(el) ))
if [ "$left" -ge "${POINT_MIN_S:-330}" ]; then
  log "points ${grid_args[*]} ($left s left)"
  timeout --signal=INT --kill-after=20 "$(( left - 25 ))" python3 bench/search_vs_grid.py --model "$model" \
    --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms" --gpu a30 --emulate-on auto \
    --level-seconds 8 "${grid_args[@]}" --time-budget "$(( left - 25 - ${POINT_MIN_S:-330} ))" \
    --search-from results/h200-llama-3-8b-a30-predict-2026-12-02-b-each --out "$keep" 2>&1 \
    | grep -v "vLLM starting (" | tee -a "$keep/console.log"
  log "points exit code: ${PIPESTATUS[0]}"
else
  log "no point started: $left s left, under POINT_MIN_S ${POINT_MIN_S:-330}"
fi
if [ -n "${OUT:-}" ]; then
  k=/tmp/pack-points && rm -rf "$k" && mkdir -p "$k"
  cp "$keep/grid.jsonl" "$keep/console.log" "$k/" 2>/dev/null
  find "$keep/grid-logs" -name 'vllm-*.log' 2>/dev/null | sort | while read -r f; do
    grep -E "Avg prompt throughput|preempt|Maximum concurrency|GPU KV cache size|healthy|Error|error" "$f" \
      | cut -c1-300 > "$k/$(basename "$(dirname "$f")")-$(basename "$f" .log).stats.txt"
  done
  tar -czf "$OUT/$(basename "$keep").tgz" -C "$k" . && log "packed $(du -h "$OUT/$(basename "$keep").tgz" | cut -f1)"
fi
