#!/usr/bin/env bash
# Cross-check of results/h200-llama-3-8b-a30 (chat, vLLM defaults certified 60.302 req/s) with vLLM's own
# benchmark client. Runs on the H200 device machine from the repo root, after the stage parts are in /tmp/stage.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[$(el)s $(date -u +%H:%M:%SZ)] $*" | tee -a "$OUT/run.log"; }
log "start on $(hostname); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
cp .xstage/part02 /tmp/stage/ && cat /tmp/stage/part* | tar -xJ -C /tmp && log "unpacked vLLM ($(ls /tmp/stage | tr "\n" " "))"
export PYTHONPATH="/tmp/gpusite:$PWD" HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
[ -d ~/.cache/vllm ] || { tar -xzf .xcheck/gpu-cache.tgz -C ~ && log "restored compile caches"; }
model=/tmp/models/llama-3-8b
python3 -m tuner.cli make-model --out "$model" --shape llama-3-8b --no-weights >/dev/null 2>&1 || log "make-model failed"
fp=$(python3 -c "from launch.fingerprint import hash_model_dir; print(hash_model_dir('$model'))" 2>/dev/null || echo "?")
log "model fingerprint $fp (study: 588a93ca6f369282536651f69de3ddfe45c194b3a4cf3655779b283b2fc9fd5f)"
python3 -c "import vllm; print('vllm', vllm.__version__)" | tee -a "$OUT/run.log"
# best.json's launched config (the A30's defaults rescaled to the H200: gmu 0.1579, 256 seqs, 2048 batched tokens)
ARGV=(--model "$model" --served-model-name llama-3-8b --load-format dummy --gpu-memory-utilization 0.1579
      --max-num-seqs 256 --max-num-batched-tokens 2048 --seed 0 --host 127.0.0.1 --port 8000)
echo "python3 -m vllm.entrypoints.openai.api_server ${ARGV[*]}" | tee -a "$OUT/run.log"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True setsid python3 -m vllm.entrypoints.openai.api_server "${ARGV[@]}" \
  > /tmp/server.log 2>&1 &
SPID=$!
stop() { kill -TERM -- -$SPID 2>/dev/null; sleep 5; kill -KILL -- -$SPID 2>/dev/null;
         grep -E "Actual usage|Available KV|GPU KV cache size|Maximum concurrency|throughput|Error|error" /tmp/server.log | grep -v "POST /v1" | cut -c1-400 > "$OUT/server-lines.txt"; }
trap stop EXIT
url=http://127.0.0.1:8000
for i in $(seq 1 330); do
  python3 -c "import urllib.request as u; u.urlopen('$url/health', timeout=2)" 2>/dev/null && break
  kill -0 $SPID 2>/dev/null || { log "server died"; exit 1; }; sleep 1
done
python3 -c "import urllib.request as u; u.urlopen('$url/health', timeout=2)" || { log "not ready"; exit 1; }
log "server ready"
for i in 1 2; do  # launch.sh's two warm-up requests
  python3 -c "import json,urllib.request as u; u.urlopen(u.Request('$url/v1/completions', data=json.dumps({'model':'llama-3-8b','prompt':'Warm up the server.','max_tokens':8,'temperature':0}).encode(), headers={'Content-Type':'application/json'}), timeout=120).read()"
done
grep -E "GPU KV cache size|Maximum concurrency" /tmp/server.log | cut -c1-300 | tee -a "$OUT/run.log"
python3 .xcheck/sample.py $url "$OUT/metrics-samples.tsv" &
SAMP=$!
snap() { python3 -c "import urllib.request as u; print(u.urlopen('$url/metrics').read().decode())" | grep '^vllm:' | grep -v '_created' | sed "s/^/$1 /" >> "$OUT/metrics-snapshots.txt"; }
RATE=57.287
echo "### vllm bench again at 0.95x, from t=$(el) s" >> "$OUT/metrics-samples.tsv"
snap before-vllm; log "vllm bench (again) at 0.95 x = $RATE req/s for 120 s"
RAW="$OUT/rerun-vllm-0.95x-raw.json" timeout 230 python3 .xcheck/vllm_bench_check_raw.py --url $url --model llama-3-8b \
  --tokenizer "$model" --workload chat --rate $RATE --seconds 120 --slo ttft_p95=2s,tpot_p95=60ms \
  --json "$OUT/rerun-vllm-bench-0.95x.json" > /tmp/bench-again.log 2>&1
log "vllm bench rc=$?"; grep -A30 "Serving Benchmark Result" /tmp/bench-again.log >> "$OUT/run.log"; snap after-vllm
echo "### slotune loadtest at 0.95x, from t=$(el) s" >> "$OUT/metrics-samples.tsv"
snap before-slotune; log "slotune loadtest at 0.95 x = $RATE req/s for 120 s"
left=$(( 565 - $(el) ))
timeout $left python3 -m loadtest.cli --url $url --model llama-3-8b --tokenizer "$model" --workload chat --rate $RATE \
  --duration 120 --seed 7919 --slo ttft_p95=2s,tpot_p95=60ms --json "$OUT/slotune-loadtest-0.95x.json" \
  --per-request /tmp/slotune-requests.jsonl > /tmp/slotune.log 2>&1
log "slotune loadtest rc=$?"; tail -c 2500 /tmp/slotune.log >> "$OUT/run.log"; snap after-slotune
gzip -c /tmp/slotune-requests.jsonl > "$OUT/slotune-0.95x-requests.jsonl.gz" 2>/dev/null
kill $SAMP; log "done"
