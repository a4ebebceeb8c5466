#!/usr/bin/env bash
# After vllm bench serve missed predict/'s certified 19.875 req/s: a fresh launch.sh server, slotune's own client
# (loadtest) at 19.875 req/s for 120 s, then vLLM's client at the same rate for 120 s on the same server.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-predict-vs-grid-2026-12-03/crosscheck-2.sh
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
D=results/cpu-predict-vs-grid-2026-12-03
PORT=18132 setsid bash $D/predict/launch.sh > /tmp/xc2-launch.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/xc2-launch.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/xc2-launch.log; exit 1; }; sleep 2; done
echo "[$(date -u +%T)] ready; loadtest at 19.875 req/s for 120 s"
.venv/bin/python -m loadtest.cli --url http://127.0.0.1:18132 --model tiny-llama --tokenizer /tmp/tiny-llama \
  --workload chat --rate 19.875 --duration 120 --slo ttft_p95=2s --seed 11 --json $D/crosscheck-2-loadtest.json 2>&1 | tail -12
echo "[$(date -u +%T)] vllm bench serve at 19.875 req/s for 120 s, same server"
.venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18132 --model tiny-llama --tokenizer /tmp/tiny-llama \
  --workload chat --rate 19.875 --seconds 120 --slo ttft_p95=2s --seed 12 --json $D/crosscheck-2-vllm-bench.json 2>&1 \
  | grep -v "it/s\]" | grep -E "P95 TTFT|Request throughput|Successful|held" 
echo "[$(date -u +%T)] done"
