#!/usr/bin/env bash
# vllm bench serve (bench/vllm_bench_check.py) with `edit-greedy` against `edit` on one fresh ngram server (spec/'s
# trial 1): the workload's temperature reaches vLLM's own client too. 1 req/s for 40 s each, fresh seeds.
# From a checkout CODE, under the CPU lock:  flock /tmp/slotune-cpu.lock bash bench-greedy.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
export HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 PYTHONPATH="$code"
d=$(mktemp -d /tmp/bench-greedy-XXXX)
.venv/bin/python bench/trial_launch.py "$here/spec" 1 "$d" > /dev/null || exit 2
PORT=18163 setsid bash "$d/launch.sh" > "$d/server.log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$d/server.log" && break; sleep 1; done
grep "ready:" "$d/server.log"
for run in edit-greedy:21 edit:22; do
  w=${run%:*} seed=${run#*:}
  .venv/bin/python bench/vllm_bench_check.py --url http://127.0.0.1:18163 --model smollm2 --tokenizer /tmp/smollm2 \
    --workload "$w" --output-tokens 64 --rate 1.0 --seconds 40 --seed "$seed" --slo ttft_p95=2s \
    --json "$here/bench-greedy-$w.json" > "$d/$w.out" 2>&1
  .venv/bin/python -c "import json, sys; d = json.load(open(sys.argv[1])); s = d['server'] or {}; print(sys.argv[2], d['completed'], 'of', d['requests'], {k: v for k, v in s.items() if 'spec' in k})" "$here/bench-greedy-$w.json" "$w"
  grep -i "temperature" "$d/$w.out" | head -2
done
