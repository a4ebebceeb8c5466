#!/usr/bin/env bash
# After predict/'s 19.875 missed on two fresh servers: h2h/'s certified rate (the same configuration, 19.166 req/s)
# under vLLM's own client for 120 s, on two more fresh launch.sh servers, one after the other.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-predict-vs-grid-2026-12-03/crosscheck-3.sh
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
D=results/cpu-predict-vs-grid-2026-12-03
rate=$(python3 -c "import json; print(round(json.load(open('$D/h2h/best.json'))['certified_rate_req_s'], 3))")
for n in 1 2; do
  PORT=18133 setsid bash $D/h2h/launch.sh > /tmp/xc3-launch-$n.log 2>&1 &
  pid=$!
  until grep -q "ready: http" /tmp/xc3-launch-$n.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/xc3-launch-$n.log; exit 1; }; sleep 2; done
  echo "[$(date -u +%T)] server $n ready; vllm bench serve at $rate req/s for 120 s"
  .venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18133 --model tiny-llama --tokenizer /tmp/tiny-llama \
    --workload chat --rate "$rate" --seconds 120 --slo ttft_p95=2s --seed $((20 + n)) \
    --json "$D/crosscheck-3-server-$n.json" 2>&1 | grep -v "it/s\]" | grep -E "P95 TTFT|Request throughput|Successful|held"
  kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null
  while pgrep -f "port 18133" >/dev/null; do sleep 1; done
done
echo "[$(date -u +%T)] done"
