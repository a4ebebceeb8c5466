#!/usr/bin/env bash
# `tune --predict` (issue #24) on the H200 test machine: the A30's memory emulated, Llama-3-8B shape with random
# weights (--load-format dummy), `chat`, ttft_p95=2s,tpot_p95=60ms: the model, workload and SLO of the committed
# study results/h200-llama-3-8b-a30/ and grid results/grid-h200-llama-3-8b-a30/. Runs there from the repo root:
#   bash scripts/gpu/h200-predict.sh TRIALS TIME_BUDGET_S HARD_LIMIT_S
# vLLM comes over in parts, each carried in its own folder by one call (.xs0/part00, .xs1/part01, then
# .xs2/part02 and .xs2/gpu-cache.tgz with this script's call): every part is copied to /tmp/stage, and once
# all are there they are unpacked (../shared/gpu/README.md).
# The study lives in /tmp/predict-keep between calls on one machine (the working tree is sent again with each
# call); a call on a fresh machine resumes from results/h200-llama-3-8b-a30-predict/study.db when that is there.
# PREDICT_SAMPLE: --predict-sample (default 60: each call ranks the sample again, ~0.5-1 s a configuration). SOAK: --soak-seconds (default 0: nothing certified).
# GRID_BEST_IF_LEFT=S: after tune, when at least S seconds of HARD_LIMIT_S are left, the A30 grid's best point
#   (max_num_seqs 512, fp8 KV, the rest vLLM's defaults) is measured once under today's protocol with
#   bench/search_vs_grid.py (a one-point grid, compared with this study), so "% of the grid's best" can be
#   judged under one protocol.
set -uo pipefail
trials="${1:-4}"
budget="${2:-480}"
hard="${3:-540}"
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[h200-predict $(el)s $(date -u +%H:%M:%SZ)] $*"; }
mkdir -p /tmp/stage
for d in .xs0 .xs1 .xs2; do
  for p in "$d"/part*; do [ -f "$p" ] && cp "$p" /tmp/stage/ && log "staged $p"; done
done
if [ ! -d /tmp/gpusite/vllm ]; then
  [ "$(ls /tmp/stage/part* 2>/dev/null | wc -l)" = 3 ] || { log "not every part is in /tmp/stage yet"; exit 0; }
  cat /tmp/stage/part* | tar -xJ -C /tmp && log "unpacked vLLM"
fi
[ -f .xs2/gpu-cache.tgz ] && [ ! -d ~/.cache/vllm ] && tar -xzf .xs2/gpu-cache.tgz -C ~ && log "restored compile caches"
[ "$trials" = 0 ] && exit 0  # staging only
source scripts/gpu/h200-env.sh
out=results/h200-llama-3-8b-a30-predict
keep=/tmp/predict-keep
mkdir -p "$out" "$keep"
[ -f "$keep/study.db" ] && cp "$keep/study.db" "$out/study.db" && log "study from $keep (this machine's last call)"
args=(--model "$model" --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms"
      --gpu a30 --emulate-on auto --level-seconds 8 --trials "$trials" --out "$out" --time-budget "$budget"
      --predict --predict-sample "${PREDICT_SAMPLE:-60}" --soak-seconds "${SOAK:-0}")
[ -f "$out/study.db" ] && args+=(--resume)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
stamp=$(mktemp)
log "tune ${args[*]}"
timeout --signal=INT --kill-after=30 "$(( hard - $(el) ))" python3 -m tuner.cli "${args[@]}" 2>&1 \
  | tee /tmp/tune-predict.log
rc=${PIPESTATUS[0]}
log "tune exit code: $rc"
cp "$out/study.db" "$keep/study.db" 2>/dev/null
left=$(( hard - $(el) ))
if [ -n "${GRID_BEST_IF_LEFT:-}" ] && [ "$left" -ge "$GRID_BEST_IF_LEFT" ] && [ -f "$out/best.json" ]; then
  log "the A30 grid's best point, measured once under today's protocol ($left s left)"
  mkdir -p /tmp/grid-best
  timeout --signal=INT --kill-after=30 "$(( left - 20 ))" python3 bench/search_vs_grid.py --model "$model" \
    --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms" --gpu a30 --emulate-on auto \
    --level-seconds 8 --grid max_num_seqs=512 --grid kv_cache_dtype=fp8 --search-from "$out" \
    --out /tmp/grid-best 2>&1 | grep -v "vLLM starting (" | tee /tmp/grid-best/console.log
  log "grid point exit code: ${PIPESTATUS[0]}"
fi
if [ -n "${OUT:-}" ]; then
  k=/tmp/pack && rm -rf "$k" && mkdir -p "$k"
  for f in trials.csv best.json launch.sh report.html study.db; do [ -f "$out/$f" ] && cp "$out/$f" "$k/"; done
  header="### H200 call of $(date -u +%Y-%m-%dT%H:%MZ) (h200-predict.sh $*; tune exit code $rc)"
  { [ -f "$keep/tune.log" ] && cat "$keep/tune.log"; echo "$header"; tail -c 2000000 /tmp/tune-predict.log; } \
    > "$k/tune.log"
  cp "$k/tune.log" "$keep/tune.log"
  { [ -f "$keep/memory-lines.txt" ] && cat "$keep/memory-lines.txt"; echo "$header"
    find "$out/logs" -name '*.log' -newer "$stamp" 2>/dev/null | sort | xargs -r grep -H -E \
      "Actual usage is|Available KV cache memory|GPU KV cache size|Maximum concurrency|model weights took|Loading took|healthy|init engine" \
      | cut -c1-400; } > "$k/memory-lines.txt" || true
  cp "$k/memory-lines.txt" "$keep/memory-lines.txt"
  [ -d /tmp/grid-best ] && cp -r /tmp/grid-best "$k/grid-best" && rm -rf "$k/grid-best/grid-logs"
  tar -czf "$OUT/predict.tgz" -C "$k" .
  log "packed $(du -h "$OUT/predict.tgz" | cut -f1)"
fi
