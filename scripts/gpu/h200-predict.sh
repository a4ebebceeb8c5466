#!/usr/bin/env bash
# `tune --predict` (issue #24) on the H200 test machine: the A30's memory emulated, Llama-3-8B shape with random
# weights (--load-format dummy), `chat`, ttft_p95=2s,tpot_p95=60ms: the model, workload and SLO of the committed
# study results/h200-llama-3-8b-a30/ and grid results/grid-h200-llama-3-8b-a30/. Runs there from the repo root:
#   bash scripts/gpu/h200-predict.sh TRIALS TIME_BUDGET_S HARD_LIMIT_S
# vLLM comes over in parts (VLLM_PARTS, default 6: ../shared/gpu/build-stage's archive re-split into 25-MiB pieces so
# that the working tree and one part stay under the 64 MiB a call carries), each carried in its own folder by one
# call (.xs0/part00 … .xs5/part05, the last with this script's call; .xs2/gpu-cache.tgz optional): every part is
# copied to /tmp/stage, and once all are there they are unpacked (../shared/gpu/README.md).
# The study lives in /tmp/keep-<its folder name> between calls on one machine (the working tree is sent again with each
# call); a call on a fresh machine resumes from results/h200-llama-3-8b-a30-predict/study.db when that is there.
# PREDICT_SAMPLE: --predict-sample (default 200, tune's: each call ranks the sample again, 31 in 4 s on the H200's
#   host; until 2026-12-03 60, which missed the region of the A30 grid's best:
#   results/h200-a30-grid-best-remeasured-2026-12-03). SOAK: --soak-seconds (default 0: nothing certified).
# CERTIFY=all|best|baseline: tune --certify (whom the soaks certify). Each soak is stored once done, and a call cut
#   in the middle of a certification is gone on from by the next (resumed) call; only the soak it cut is lost.
# CERTIFY_IF_LEFT=S: tune searches without soaks; once the search is over (TRIALS trials, or --predict stopped it) and
#   S seconds of HARD_LIMIT_S are left, a second tune call (resumed, nothing left to launch) certifies with SOAK.
# PREDICT_OUT: the study's folder (default results/h200-llama-3-8b-a30-predict); it is kept in /tmp/keep-<its name>.
# CROSSCHECK_IF_LEFT=S: after tune, when at least S seconds of HARD_LIMIT_S are left and best.json states a certified
#   rate, scripts/gpu/h200-crosscheck.sh holds the winner's launched configuration at CROSSCHECK_FACTOR (0.95) x that
#   rate for CROSSCHECK_SECONDS (120) under vLLM's own benchmark client; TRIALS 0 skips tune and runs only that.
#   CROSSCHECK_FACTOR may list several ("1.15 1.3"): a fresh server each, in turn, each needing CROSSCHECK_IF_LEFT.
#   CROSSCHECK_POINT=GRID_JSONL serves that grid row's point instead of the winner (h200-crosscheck.sh).
#   CROSSCHECK_STEPS / CROSSCHECK_SEEDS: several runs on the one server (h200-crosscheck.sh; FACTOR then only names them).
#   Once it has run on a machine, a later call there skips it (the same command can be repeated call after call).
# GRID_BEST_IF_LEFT=S: after tune, when at least S seconds of HARD_LIMIT_S are left, the A30 grid's best point
#   (max_num_seqs 512, fp8 KV, the rest vLLM's defaults; GRID_POINT="KNOB=V KNOB=V ...": another point, any
#   ServeConfig field, "KNOB=V1,V2" several points, e.g. "max_num_seqs=512 kv_cache_dtype=fp8 api_server_count=1,2")
#   is measured once under today's protocol with
#   bench/search_vs_grid.py (a one-point grid, compared with this study), so "% of the grid's best" can be
#   judged under one protocol. REMEASURE=N: then the grid point, vLLM's defaults and the study's best are measured N
#   more times each on fresh servers, interleaved (bench/grid_remeasure.py; kept as they land, so the next call on
#   the same machine goes on from them; no measurement is started that the call's limit would cut).
#   REMEASURE_SEARCH_FIRST=1: the study's best first (so a call cut short has measured it beside the next one).
set -uo pipefail
trials="${1:-4}"
budget="${2:-480}"
hard="${3:-540}"
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[h200-predict $(el)s $(date -u +%H:%M:%SZ)] $*"; }
source scripts/gpu/h200-stage.sh
stage_vllm || exit 0
[ -f .xs2/gpu-cache.tgz ] && [ ! -d ~/.cache/vllm ] && tar -xzf .xs2/gpu-cache.tgz -C ~ && log "restored compile caches"
[ "$trials" = 0 ] && [ -z "${CROSSCHECK_IF_LEFT:-}${GRID_BEST_IF_LEFT:-}" ] && exit 0  # staging only
source scripts/gpu/h200-env.sh
out="${PREDICT_OUT:-results/h200-llama-3-8b-a30-predict}"
keep="/tmp/keep-$(basename "$out")"
mkdir -p "$out" "$keep"
# this machine's last call left the study (and its outputs: a later call that runs no tune cross-checks or compares
# against what that call certified, not the tree's older best.json)
[ -f "$keep/study.db" ] && log "study from $keep (this machine's last call)"
for f in study.db trials.csv best.json launch.sh report.html; do [ -f "$keep/$f" ] && cp "$keep/$f" "$out/$f"; done
for f in tune.log memory-lines.txt; do  # a fresh machine goes on from the committed logs (the pack holds all calls')
  [ ! -f "$keep/$f" ] && [ -f "$out/$f" ] && cp "$out/$f" "$keep/$f"
done
args=(--model "$model" --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms"
      --gpu a30 --emulate-on auto --level-seconds 8 --trials "$trials" --out "$out" --time-budget "$budget"
      --predict --predict-sample "${PREDICT_SAMPLE:-200}")
[ -n "${CERTIFY:-}" ] && args+=(--certify "$CERTIFY")
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
stamp=$(mktemp)
rc=-
: > /tmp/tune-predict.log
tune() {  # SOAK_S: one tune call, resumed when the study is there, stopped by SIGINT at HARD_LIMIT_S
  local more=(--soak-seconds "$1"); [ -f "$out/study.db" ] && more+=(--resume)
  log "tune ${args[*]} ${more[*]}"
  timeout --signal=INT --kill-after=30 "$(( hard - $(el) ))" python3 -m tuner.cli "${args[@]}" "${more[@]}" 2>&1 \
    | tee -a /tmp/tune-predict.log
  rc=${PIPESTATUS[0]}
  log "tune exit code: $rc"
  cp "$out/study.db" "$keep/study.db" 2>/dev/null
  for f in trials.csv best.json launch.sh report.html; do [ -f "$out/$f" ] && cp "$out/$f" "$keep/"; done
}
searched() {  # the search is over: TRIALS trials finished, or --predict said no more launches
  grep -q -e "--predict: no more launches" -e "--predict: the search stopped on these" /tmp/tune-predict.log && return 0
  python3 -c "import sys
from tuner.search.study import finished, open_study
s = open_study('sqlite:///$PWD/$out/study.db', resume=True, seed=0, must_exist=True)
sys.exit(0 if len(finished(s)) >= $trials else 1)" 2>/dev/null
}
if [ "$trials" != 0 ]; then
  if [ -n "${CERTIFY_IF_LEFT:-}" ]; then
    # the search without soaks; then, once it is over and CERTIFY_IF_LEFT s are left, the soaks (SOAK s each)
    # in a second tune call that has the time for them: a certification cut short is lost
    tune 0
    left=$(( hard - $(el) ))
    if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then
      if searched && [ "$left" -ge "$CERTIFY_IF_LEFT" ]; then
        log "certifying: the search is over and $left s are left"
        tune "${SOAK:-90}"
      else
        log "not certifying in this call: $left s left (CERTIFY_IF_LEFT $CERTIFY_IF_LEFT), search over: $(searched && echo yes || echo no)"
      fi
    fi
  else
    tune "${SOAK:-0}"
  fi
fi
for factor in ${CROSSCHECK_FACTOR:-0.95}; do  # one fresh server per factor, in turn
  left=$(( hard - $(el) ))
  checked=$(compgen -G "/tmp/crosscheck/crosscheck-vllm-bench-${factor}x*.json" | head -1)  # CROSSCHECK_STEPS: -run<I>
  if [ -n "${CROSSCHECK_IF_LEFT:-}" ] && [ -n "$checked" ]; then  # so one command can be repeated call after call
    log "cross-check already run on this machine ($checked)"
  elif [ -n "${CROSSCHECK_IF_LEFT:-}" ] && [ "$left" -ge "$CROSSCHECK_IF_LEFT" ] && [ -f "$out/best.json" ]; then
    log "cross-check with vllm bench at $factor x ($left s left)"
    bash scripts/gpu/h200-crosscheck.sh "$out" "$factor" "${CROSSCHECK_SECONDS:-120}" "$(( left - 15 ))" /tmp/crosscheck
    log "cross-check exit code: $?"
  elif [ -n "${CROSSCHECK_IF_LEFT:-}" ]; then
    log "cross-check at $factor x skipped: $left s left, under $CROSSCHECK_IF_LEFT"
  fi
done
left=$(( hard - $(el) ))
if [ -n "${GRID_BEST_IF_LEFT:-}" ] && [ "$left" -ge "$GRID_BEST_IF_LEFT" ] && [ -f "$out/best.json" ]; then
  grid_args=(); for kv in ${GRID_POINT:-max_num_seqs=512 kv_cache_dtype=fp8}; do grid_args+=(--grid "$kv"); done
  log "the grid point ${grid_args[*]}, measured once under today's protocol ($left s left)"
  mkdir -p /tmp/grid-best  # GRID_KEEP: an earlier call's grid-best/ (a fresh machine goes on from its rows)
  [ ! -f /tmp/grid-best/grid.jsonl ] && [ -f "${GRID_KEEP:-/nonexistent}/grid.jsonl" ] \
    && cp "$GRID_KEEP"/*.jsonl /tmp/grid-best/ && log "grid rows from $GRID_KEEP"
  timeout --signal=INT --kill-after=30 "$(( left - 20 ))" python3 bench/search_vs_grid.py --model "$model" \
    --load-format dummy --workload chat --slo "ttft_p95=2s,tpot_p95=60ms" --gpu a30 --emulate-on auto \
    --level-seconds 8 "${grid_args[@]}" --search-from "$out" --time-budget "$(( left - 40 ))" \
    --remeasure "${REMEASURE:-0}" ${REMEASURE_SEARCH_FIRST:+--remeasure-search-first} --out /tmp/grid-best 2>&1 | grep -v "vLLM starting (" \
    | tee -a /tmp/grid-best/console.log
  log "grid point exit code: ${PIPESTATUS[0]}"
fi
if [ -n "${OUT:-}" ]; then
  k=/tmp/pack && rm -rf "$k" && mkdir -p "$k"
  for f in trials.csv best.json launch.sh report.html study.db; do
    if [ -f "$out/$f" ]; then cp "$out/$f" "$k/"; elif [ -f "$keep/$f" ]; then cp "$keep/$f" "$k/"; fi
  done
  header="### H200 call of $(date -u +%Y-%m-%dT%H:%MZ) (h200-predict.sh $*; tune exit code $rc)"
  { [ -f "$keep/tune.log" ] && cat "$keep/tune.log"; echo "$header"; tail -c 2000000 /tmp/tune-predict.log; } \
    > "$k/tune.log"
  cp "$k/tune.log" "$keep/tune.log"
  { [ -f "$keep/memory-lines.txt" ] && cat "$keep/memory-lines.txt"; echo "$header"
    find "$out/logs" -name '*.log' -newer "$stamp" 2>/dev/null | sort | xargs -r grep -H -E \
      "Actual usage is|Available KV cache memory|specified by kv_cache_memory_bytes|GPU KV cache size|Maximum concurrency|model weights took|Loading took|healthy|init engine" \
      | cut -c1-400; } > "$k/memory-lines.txt" || true
  cp "$k/memory-lines.txt" "$keep/memory-lines.txt"
  [ -d /tmp/grid-best ] && cp -r /tmp/grid-best "$k/grid-best" && rm -rf "$k/grid-best/grid-logs"
  [ -d /tmp/crosscheck ] && cp -r /tmp/crosscheck "$k/crosscheck"
  tar -czf "$OUT/predict.tgz" -C "$k" .
  log "packed $(du -h "$OUT/predict.tgz" | cut -f1)"
fi
