#!/usr/bin/env bash
# The winner at its certified 3.245 req/s under slotune's own `loadtest` for DURATION s (default 120), as vLLM's client ran it
# (crosscheck-*.sh): each draw (seed) on a fresh launch.sh server, the same workload, output tokens and SLO. slotune's
# soaks held 3 draws of 3 at 1,420-1,484 ms where vLLM's client held 2 of 4 (1,168-3,081 ms): is slotune's client
# lighter, or did its soaks draw light? From a clean clone CODE, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash loadtest-winner-draws.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
for seed in ${SEEDS:-81 82 83 84}; do
  log=$(mktemp /tmp/loadtest-draw-XXXX.log)
  PORT=18167 setsid bash "$here/study/launch.sh" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "ready: http" "$log" && break; sleep 1; done
  grep -E "ready: http|a fixed request" "$log"
  echo "[$(date -u +%T)] loadtest at 3.245 req/s for ${DURATION:-120} s, seed $seed"
  .venv/bin/loadtest --url http://127.0.0.1:18167 --model smollm2 --tokenizer /tmp/smollm2 --workload edit-greedy \
    --rate 3.2450378027941227 --duration "${DURATION:-120}" --output-tokens 64 --slo ttft_p95=2s --seed "$seed" \
    --json "$here/loadtest-winner-${DURATION:-120}s-seed$seed.json" 2>&1 | grep -v "^\s*$" | tail -25
  echo "seed $seed exit ${PIPESTATUS[0]}"
  kill -TERM -- -"$pid" 2>/dev/null; sleep 8; kill -KILL -- -"$pid" 2>/dev/null
done
date -u
