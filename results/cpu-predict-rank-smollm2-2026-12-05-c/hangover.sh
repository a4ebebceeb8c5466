#!/bin/bash
# Does an overload leave vLLM-CPU slower? Trial 5 (512 x 2048) on ONE fresh server (bench/trial_launch.py's launch.sh):
# vllm bench serve at 2.685 req/s for 120 s, then 3.2 req/s for 60 s (over capacity, as the search's level 3.17 was),
# then 2.685 for 120 s again. Each run waits for its requests to finish (no cancelling, unlike a lost search level).
# Run from a clean checkout with a .venv link, under the CPU lock: bash hangover.sh STUDY_DIR OUT_DIR
# SEEDS: the runs' prompt seeds (default "41 42 43", the first sitting of it; "41 42 41": runs 1 and 3 alike).
# STEPS: the runs as RATE:SECONDS (default "2.685:120 3.2:60 2.685:120"; "2.685:120 2.685:120": the control, no overload);
# idle:SECONDS sends nothing for that long.
set -u
study=$1 out=$2
py=.venv/bin/python
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
mkdir -p "$out"
"$py" bench/trial_launch.py "$study" 5 "$out/server" || exit 2
PORT=18135 setsid bash "$out/server/launch.sh" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$out/server.log" && break; sleep 1; done
grep -q "ready: http" "$out/server.log" || { echo "not ready"; tail -5 "$out/server.log"; exit 2; }
read -r -a seeds <<< "${SEEDS:-41 42 43}"
i=0
for step in ${STEPS:-2.685:120 3.2:60 2.685:120}; do
  set -- ${step/:/ }
  if [ "$1" = idle ]; then echo "[$(date -u +%T)] idle for $2 s"; sleep "$2"; continue; fi
  i=$((i + 1))
  echo "[$(date -u +%T)] run $i: vllm bench serve at $1 req/s for $2 s"
  "$py" bench/vllm_bench_check.py --url http://127.0.0.1:18135 --model smollm2 --tokenizer /tmp/smollm2 --workload edit \
    --rate "$1" --seconds "$2" --slo ttft_p95=2s --seed "${seeds[$((i - 1))]}" --json "$out/run$i-$1.json" 2>&1 \
    | grep -v "it/s\]" | grep -E "P95 TTFT|Request throughput|Successful|Failed|held"
done
echo "[$(date -u +%T)] done"
