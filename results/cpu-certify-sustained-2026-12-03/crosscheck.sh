#!/usr/bin/env bash
# vLLM's defaults, certified 21.896 on two fresh servers: its certified rate under vLLM's own client for 120 s
# on a third fresh launch.sh server.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-certify-sustained-2026-12-03/crosscheck.sh
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
D=results/cpu-certify-sustained-2026-12-03
rate=$(python3 -c "import json; print(round(json.load(open('$D/best.json'))['certified_rate_req_s'], 3))")
PORT=18134 setsid bash $D/launch.sh > /tmp/xcr-launch.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/xcr-launch.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/xcr-launch.log; exit 1; }; sleep 2; done
echo "[$(date -u +%T)] ready; vllm bench serve at $rate req/s for 120 s"
.venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18134 --model tiny-llama --tokenizer /tmp/tiny-llama \
  --workload chat --rate "$rate" --seconds 120 --slo ttft_p95=2s --seed 31 \
  --json "$D/crosscheck-vllm-bench.json" 2>&1 | grep -v "it/s\]" | grep -E "P95 TTFT|Request throughput|Successful|held"
echo "[$(date -u +%T)] done"
