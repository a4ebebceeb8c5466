#!/usr/bin/env bash
# The client A/B again with fresh prompts per run (bench/client_ab.py since 3cc193d), against one launch.sh server of
# ../cpu-lifetimes-2026-12-04/fourth/ (vLLM's defaults on the tiny random Llama, niced +10 by launch.sh), `chat` with
# 64 output tokens, 3.5 req/s Poisson, 60 s a run, A B C C B A. Run from the repo root under the CPU lock.
cd "$(dirname "$0")/../.." || exit 1
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1
log=$(mktemp /tmp/client-ab-XXXX.log)
PORT=18135 setsid bash results/cpu-lifetimes-2026-12-04/fourth/launch.sh > "$log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$log" && break; sleep 1; done
grep "ready: http" "$log" || { tail -5 "$log"; exit 2; }
.venv/bin/python bench/client_ab.py --url http://127.0.0.1:18135 --model tiny-llama --tokenizer /tmp/tiny-llama \
  --rate 3.5 --seconds 60 --output-tokens 64
