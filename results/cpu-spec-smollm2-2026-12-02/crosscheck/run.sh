#!/usr/bin/env bash
# vLLM's own benchmark client against the spec study's launch.sh at FACTOR x its certified rate for SECONDS.
set -u
factor=${1:-1.0} secs=${2:-240}
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1
rate=$(.venv/bin/python -c "import json; print(round($factor*json.load(open('/tmp/spec1/best.json'))['certified_rate_req_s'],4))")
name=$(.venv/bin/python -c "import json; print(json.load(open('/tmp/spec1/best.json'))['best']['config']['served_model_name'])")
echo "[$(date -u +%T)] launch.sh; then vllm bench at $factor x = $rate req/s for $secs s (model $name)"
PORT=18123 setsid bash ${LAUNCH:-/tmp/spec1/launch.sh} > /tmp/xspec/launch-${TAG:-}$factor.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/xspec/launch-${TAG:-}$factor.log; do kill -0 $pid 2>/dev/null || { echo "launch.sh died"; tail -20 /tmp/xspec/launch-${TAG:-}$factor.log; exit 1; }; sleep 2; done
echo "[$(date -u +%T)] ready"
.venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18123 --model "$name" --tokenizer /tmp/smollm2 \
  --workload edit --output-tokens 64 --rate "$rate" --seconds "$secs" --slo ttft_p95=2s --json /tmp/xspec/bench-${TAG:-}$factor.json 2>&1 | tail -30
echo "[$(date -u +%T)] done"
