#!/usr/bin/env bash
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1 VLLM_CPU_KVCACHE_SPACE=1
S=/tmp/pytest-of-root/pytest-192/e2e0
FORCE=1 PORT=18124 setsid bash $S/study/launch.sh > /tmp/ab2-launch.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/ab2-launch.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/ab2-launch.log; exit 1; }; sleep 2; done
echo "[$(date -u +%T)] ready"
.venv/bin/python bench/client_ab.py --url http://127.0.0.1:18124 --model model --tokenizer $S/model --rate 26 --seconds 90 --output-tokens 64
echo "[$(date -u +%T)] done"
