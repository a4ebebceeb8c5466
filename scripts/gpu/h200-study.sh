#!/usr/bin/env bash
# Tune a Llama-3-8B-shaped model (random weights, --load-format dummy) on the H200 test machine.
# Runs there, from the repo root, after vLLM 0.26.0 was brought over (../shared/gpu/README.md):
#   bash scripts/gpu/h200-study.sh a30|h200|a30-w4a16|h200-w4a16 TRIALS TIME_BUDGET_S HARD_LIMIT_S
# a30: the A30's memory emulated on the H200 (gpu_memory_utilization rescaled; speed is the H200's),
#      two servers resident (one starting while the other is measured); h200: the native profile.
# -w4a16: the same with the model's 4-bit variant searched as a knob (--quantized-model: a config-only
#      compressed-tensors W4A16 model from make-model --w4a16, served with dummy weights like the 16-bit one).
# The study resumes from results/h200-llama-3-8b-<target>/ when it is there, so work spreads over calls.
# DEVICES=0,1 (on a two-H200 host): one trial per GPU at a time (--devices), twice that with a30's overlapped startups.
# WORKLOAD=longdoc (a profiles/workloads name; default chat): results go to ...-<target>-<workload> then.
# CONFIRM=N: then tune's --confirm N (the best and its rival re-measured on fresh servers; with DEVICES=0,1 both
#      at once, one per GPU). TRIALS no more than the study's finished trials confirms without searching further;
#      the rounds are kept in study.db, so calls of CONFIRM=1 (one round fits a call) add up in best.json.
#      Keep DEVICES the same across such calls: the rounds swap GPUs themselves, going on from the stored
#      rounds (changing DEVICES as well undoes the swap; best.json records each measurement's GPU).
# STUDY_OUT=DIR: the study's folder instead (a copy prepared for one job, e.g. a reopened certification).
# SOAK=S: certifying soaks of S seconds (tune --soak-seconds; default tune's, 180 on a GPU; 0: none).
# CERTIFY=all|best|baseline: whom they certify (tune --certify). TRIALS no more than the study's finished
#      trials certifies without searching further; certifications are kept in study.db, so CERTIFY=best then
#      CERTIFY=baseline in two calls give the like-for-like certified gain.
set -euo pipefail
target="${1:?usage: h200-study.sh a30|h200|a30-w4a16|h200-w4a16 TRIALS TIME_BUDGET_S HARD_LIMIT_S}"
gpu="${target%-w4a16}"
trials="${2:-10}"
budget="${3:-420}"   # no new trial starts once a typical (median) trial would overrun this
hard="${4:-540}"     # then SIGINT: finished trials are kept, servers stopped
source scripts/gpu/h200-env.sh
workload="${WORKLOAD:-chat}"
[ -f "profiles/workloads/$workload.yaml" ] || { echo "no workload profiles/workloads/$workload.yaml" >&2; exit 2; }
out="results/h200-llama-3-8b-$target"
[ "$workload" = chat ] || out+="-$workload"
name="${out#results/h200-llama-3-8b-}"  # the target, with the workload when not chat: names this call's files
if [ -n "${STUDY_OUT:-}" ]; then out="$STUDY_OUT" name="$(basename "$STUDY_OUT")"; fi
args=(--model "$model" --load-format dummy --workload "$workload" --slo "ttft_p95=2s,tpot_p95=60ms"
      --trials "$trials" --out "$out" --time-budget "$budget" --level-seconds 8)
[ -f "$out/study.db" ] && args+=(--resume)
[ -n "${DEVICES:-}" ] && args+=(--devices "$DEVICES")
[ -n "${CONFIRM:-}" ] && args+=(--confirm "$CONFIRM")
[ -n "${SOAK:-}" ] && args+=(--soak-seconds "$SOAK")
[ -n "${CERTIFY:-}" ] && args+=(--certify "$CERTIFY")
if [ "$gpu" != "$target" ]; then
  w4a16_model
  args+=(--quantized-model "$model-w4a16")
fi
if [ "$gpu" = a30 ]; then
  args+=(--gpu a30 --emulate-on auto --overlap-startup)
else
  args+=(--gpu "$gpu")
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
stamp=$(mktemp)  # this call's trial logs are the ones newer than this
set +e
timeout --signal=INT --kill-after=30 "$hard" python3 -m tuner.cli "${args[@]}" 2>&1 | tee "/tmp/tune-$name.log"
rc=${PIPESTATUS[0]}
set -e
echo "tune exit code: $rc"
if [ -n "${OUT:-}" ]; then
  # one archive per target (and workload): the device machine returns at most 8 files per call, and a second target's
  # study.db left behind was lost once (the next call's working tree did not keep it)
  keep="/tmp/keep-$name"
  rm -rf "$keep" && mkdir -p "$keep"
  for f in trials.csv best.json launch.sh report.html study.db; do
    [ -f "$out/$f" ] && cp "$out/$f" "$keep/"
  done
  # tune.log and memory-lines.txt keep the earlier calls' lines (committed in $out), this call's under a header
  header="### H200 call of $(date -u +%Y-%m-%dT%H:%MZ) (${DEVICES:+DEVICES=$DEVICES }${WORKLOAD:+WORKLOAD=$WORKLOAD }${CONFIRM:+CONFIRM=$CONFIRM }${SOAK:+SOAK=$SOAK }${CERTIFY:+CERTIFY=$CERTIFY }h200-study.sh $*; tune exit code $rc)"
  { [ -f "$out/tune.log" ] && cat "$out/tune.log"; echo "$header"; tail -c 2000000 "/tmp/tune-$name.log"; } \
    > "$keep/tune.log"
  # the startup memory lines of this call's trials (logs newer than its start): the budget's calibration data
  { [ -f "$out/memory-lines.txt" ] && cat "$out/memory-lines.txt"; echo "$header"
    find "$out/logs" -path '*/trial-*' -name '*.log' -newer "$stamp" 2>/dev/null | sort | xargs -r grep -h -E \
      "CUDA graph pool memory|Model Runner|Actual usage is|Available KV cache memory|GPU KV cache size|Maximum concurrency|Memory profiling takes|model weights took" \
      | cut -c1-400; } > "$keep/memory-lines.txt" || true
  tar -czf "$OUT/$name.tgz" -C "$keep" .
  save_compile_caches
fi
