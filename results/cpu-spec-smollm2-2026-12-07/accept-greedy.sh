#!/usr/bin/env bash
# The `edit-greedy` workload (temperature 0) against `edit` (the server's default sampling, 1.0) on one fresh ngram
# server (spec/'s trial 1): 40 requests each, 64 output tokens, 4 at a time; loadtest's vLLM /metrics deltas per run
# give each run's drafts and acceptance. From a checkout CODE with the workload's temperature, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash accept-greedy.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
export HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 PYTHONPATH="$code"
d=$(mktemp -d /tmp/accept-XXXX)
.venv/bin/python bench/trial_launch.py "$here/spec" 1 "$d" || exit 2
PORT=18162 setsid bash "$d/launch.sh" > "$d/server.log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$d/server.log" && break; sleep 1; done
grep "ready:" "$d/server.log"
for run in edit-greedy:5 edit:6 edit-greedy:7; do  # workload:seed, fresh prompts each
  w=${run%:*} seed=${run#*:}
  .venv/bin/python -c "import sys; from loadtest.cli import main; sys.exit(main())" --url http://127.0.0.1:18162 \
    --model smollm2 --tokenizer /tmp/smollm2 --workload "$w" --concurrency 4 --requests 40 --output-tokens 64 \
    --seed "$seed" --json "$d/$w-$seed.json" > /dev/null
  .venv/bin/python -c "import json, sys; s = json.load(open(sys.argv[1]))['server']; print(sys.argv[2], 'drafts', s['spec_decode_drafts'], 'acceptance', round(s['spec_decode_acceptance_rate'], 4), 'accepted per draft', round(s['spec_decode_mean_accepted_per_draft'], 3))" "$d/$w-$seed.json" "$w (seed $seed)"
done
