#!/usr/bin/env bash
# The certified rate of this study (120-s soaks) under the draws that the 60-s study's 3.245 met
# (../cpu-spec-greedy-smollm2-2026-12-07): `vllm bench serve` with seeds 71-74 and slotune's `loadtest` with seeds
# 81-84, 120 s each, each on a fresh launch.sh server, the same workload, output tokens and SLO. From a clean clone
# CODE, under the CPU lock:   flock /tmp/slotune-cpu.lock bash crosscheck-draws.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
rate=$(.venv/bin/python -c "import json,sys; print(json.load(open(sys.argv[1]))['certified_rate_req_s'])" "$here/study/best.json")
echo "certified rate $rate req/s"
for seed in ${BENCH_SEEDS:-71 72 73 74}; do
  date -u
  SEED=$seed PORT=18171 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-winner-seed$seed.json"
  echo "vllm bench serve seed $seed exit $?"
done
for seed in ${LOADTEST_SEEDS:-81 82 83 84}; do
  log=$(mktemp /tmp/loadtest-draw-XXXX.log)
  PORT=18172 setsid bash "$here/study/launch.sh" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "ready: http" "$log" && break; sleep 1; done
  grep -E "ready: http|a fixed request" "$log"
  echo "[$(date -u +%T)] loadtest at $rate req/s for 120 s, seed $seed"
  .venv/bin/loadtest --url http://127.0.0.1:18172 --model smollm2 --tokenizer /tmp/smollm2 --workload edit-greedy \
    --rate "$rate" --duration 120 --output-tokens 64 --slo ttft_p95=2s --seed "$seed" \
    --json "$here/loadtest-winner-120s-seed$seed.json" 2>&1 | grep -v "^\s*$" | tail -25
  echo "loadtest seed $seed exit ${PIPESTATUS[0]}"
  kill -TERM -- -"$pid" 2>/dev/null; sleep 8; kill -KILL -- -"$pid" 2>/dev/null
done
date -u
