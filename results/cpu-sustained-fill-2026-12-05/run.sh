#!/bin/bash
# What a soak "kept up with" (loadtest.metrics.sustained_rate), counted from the first answer or once the batch has
# filled: SmolLM2-135M-Instruct (real weights, /tmp/smollm2), `edit`, on one fresh server started by a study's
# launch.sh (STUDY, default the rank check's), two open-loop runs of `loadtest` with raw records: RATE_HELD (a rate
# the search saw hold) for 150 s and RATE_OVER (one it saw miss) for 120 s. Then sustained.py reads both.
# Run from the repo root under the CPU lock, with main's venv linked as .venv.
set -u
study="${STUDY:-/tmp/rk/rank}" out="${OUT_DIR:-/tmp/sf}" port=18135
mkdir -p "$out"
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
git log -1 --format='code %h %cd'
name=$(sed -n 's/^SERVED_NAME=//p' "$study/launch.sh" | head -1)
log="$out/server.log"
PORT=$port setsid bash "$study/launch.sh" > "$log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$log" && break; sleep 1; done
grep -q "ready: http" "$log" || { echo "not ready (log $log)"; exit 2; }
for run in "held ${RATE_HELD:?} 150" "over ${RATE_OVER:?} 120"; do
  read -r tag rate secs <<< "$run"
  echo "[$(date -u +%T)] loadtest $tag: $rate req/s for $secs s"
  .venv/bin/loadtest --url "http://127.0.0.1:$port" --model "$name" --tokenizer /tmp/smollm2 --workload edit \
    --rate "$rate" --duration "$secs" --warmup 2 --seed 41 --slo ttft_p95=2s --timeout 600 \
    --json "$out/$tag.json" --per-request "$out/$tag.jsonl" | tail -12
done
date -u
