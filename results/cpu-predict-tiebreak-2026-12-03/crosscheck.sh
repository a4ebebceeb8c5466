#!/usr/bin/env bash
# A's certified winner (predict/) checked with vLLM's own benchmark client on A's launch.sh server, fresh:
# 1.0 x the certified rate for 120 s.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-predict-tiebreak-2026-12-03/crosscheck.sh
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
D=results/cpu-predict-tiebreak-2026-12-03/predict
rate=$(python3 -c "import json; print(round(json.load(open('$D/best.json'))['certified_rate_req_s'], 3))")
PORT=18131 setsid bash $D/launch.sh > /tmp/xc-launch.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/xc-launch.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/xc-launch.log; exit 1; }; sleep 2; done
echo "[$(date -u +%T)] ready; vllm bench serve at the certified $rate req/s for 120 s"
.venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18131 --model tiny-llama --tokenizer /tmp/tiny-llama \
  --workload chat --rate "$rate" --seconds 120 --slo ttft_p95=2s --seed 11 \
  --json "$D/../crosscheck-vllm-bench-1.0x.json" 2>&1 | grep -v "it/s\]" | tail -25
echo "[$(date -u +%T)] done"
