#!/usr/bin/env bash
# Cross-check of results/h200-llama-3-8b-a30 (chat, vLLM defaults certified 60.302 req/s) with vLLM's own
# benchmark client. Runs on the H200 device machine from the repo root, after the stage parts are in /tmp/stage.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[$(el)s $(date -u +%H:%M:%SZ)] $*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active --format=csv -l 5 > "$OUT/gpu.csv" 2>&1 &
GPUMON=$!
log "cpus $(nproc), load $(cat /proc/loadavg)"
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
         kill $GPUMON 2>/dev/null; grep -E "Actual usage|Available KV|GPU KV cache size|Maximum concurrency|throughput|Error|error" /tmp/server.log | grep -v "POST /v1" | cut -c1-400 > "$OUT/server-lines.txt"; }
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
snap() { python3 -c "import urllib.request as u; print(u.urlopen('$url/metrics').read().decode())" | grep -E '^vllm:(num_requests|num_preemptions|kv_cache_usage|request_success_total|generation_tokens_total|prompt_tokens_total)' | sed "s/^/$1 /" >> "$OUT/metrics-snapshots.txt"; }
bench() {  # factor seconds limit
  local rate; rate=$(python3 -c "print(round($1 * 60.302129937502905, 3))")
  echo "### ${1}x: $rate req/s for $2 s, from t=$(el) s" >> "$OUT/metrics-samples.tsv"
  snap "before-$1x"; log "vllm bench at $1 x = $rate req/s for $2 s"
  timeout "$3" python3 .xcheck/vllm_bench_check.py --url $url --model llama-3-8b --tokenizer "$model" \
    --workload chat --rate "$rate" --seconds "$2" --slo ttft_p95=2s,tpot_p95=60ms \
    --json "$OUT/run3-vllm-bench-$1x.json" > "/tmp/bench-$1.log" 2>&1
  log "bench $1x rc=$?"; tail -c 3000 "/tmp/bench-$1.log" >> "$OUT/run.log"; snap "after-$1x"
}
bench 0.95 120 230
left=$(( 560 - $(el) )); log "left for 1.3x: $left s"
if [ $left -gt 120 ]; then bench 1.3 90 $left; else log "skipped 1.3x: too little time"; fi
kill $SAMP; log "done"
