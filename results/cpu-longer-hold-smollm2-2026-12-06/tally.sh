#!/bin/bash
# Is it the client? Trial TRIAL (default 1) of a study, each run on its own fresh server (bench/trial_launch.py's
# launch.sh, niced as the search's servers), at one Poisson rate with the same prompts (one seed): slotune's own
# `loadtest` and `vllm bench serve` (bench/vllm_bench_check.py), in the order TOOLS gives. RUNS="TOOL:RATE:SEED ...":
# each run's own rate and seed instead (the seed sets the prompts, and loadtest's arrivals; vLLM's client draws its own).
# TOOL loadtest-nocu: loadtest --no-continuous-usage (no token count asked on every streamed chunk).
# From a clean checkout with a .venv link, under the CPU lock:
#   [TOOLS="loadtest bench"] [RUNS=...] bash client-ab.sh STUDY OUT RATE SECONDS
set -u
study=$1 out=$2 rate=$3 secs=$4
py=.venv/bin/python
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
mkdir -p "$out"
"$py" bench/trial_launch.py "$study" "${TRIAL:-1}" "$out/server" > /dev/null || exit 2
i=0
runs="${RUNS:-}"
[ -z "$runs" ] && for tool in ${TOOLS:-loadtest bench}; do runs="$runs $tool:$3:41"; done
for run in $runs; do
  IFS=: read -r tool rate seed <<< "$run"
  i=$((i + 1)); port=$((18140 + i))
  echo "[$(date -u +%T)] run $i: $tool at $rate req/s for $secs s, seed $seed, on a fresh server (port $port)"
  PORT=$port setsid bash "$out/server/launch.sh" > "$out/server-$i.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "ready: http" "$out/server-$i.log" && break; sleep 1; done
  grep -q "ready: http" "$out/server-$i.log" || { echo "not ready"; tail -5 "$out/server-$i.log"; exit 2; }
  url=http://127.0.0.1:$port
  if [ "${tool%-nocu}" = loadtest ]; then
    extra=(); [ "$tool" = loadtest-nocu ] && extra=(--no-continuous-usage)
    .venv/bin/loadtest "${extra[@]}" --url "$url" --model smollm2 --tokenizer /tmp/smollm2 --workload edit --rate "$rate" \
      --duration "$secs" --slo ttft_p95=2s --seed $seed --json "$out/run$i-loadtest-$rate.json" 2>&1 | tail -25
  else
    "$py" bench/vllm_bench_check.py --url "$url" --model smollm2 --tokenizer /tmp/smollm2 --workload edit \
      --rate "$rate" --seconds "$secs" --slo ttft_p95=2s --seed $seed --json "$out/run$i-bench-$rate.json" 2>&1 \
      | grep -v "it/s\]" | grep -E "P95 TTFT|P95 TPOT|Request throughput|Successful|Failed|held|vllm_bench_check:"
  fi
  kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null; wait $pid 2>/dev/null
done
echo "[$(date -u +%T)] done"
