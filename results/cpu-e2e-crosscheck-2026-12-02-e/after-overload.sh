#!/usr/bin/env bash
# One launch.sh server: vLLM's client at 26 req/s fresh; slotune's client overloading it (37 req/s, 60 s);
# vLLM's client at 26 req/s right after; again after 60 s idle.
set -u
cd /work/main
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV=1 VLLM_CPU_KVCACHE_SPACE=1
S=/tmp/pytest-of-root/pytest-192/e2e0
FORCE=1 PORT=18125 setsid bash $S/study/launch.sh > /tmp/ao-launch.log 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
until grep -q "ready: http" /tmp/ao-launch.log; do kill -0 $pid 2>/dev/null || { echo died; tail /tmp/ao-launch.log; exit 1; }; sleep 2; done
U=http://127.0.0.1:18125
vb() { .venv/bin/python bench/vllm_bench_check.py --url $U --model model --tokenizer $S/model --workload chat --output-tokens 64 --rate $1 --seconds $2 --slo ttft_p95=2s --json /tmp/ao-$3.json > /tmp/ao-$3.log 2>&1; .venv/bin/python -c "
import json; d=json.load(open('/tmp/ao-$3.json')); print('[$(date -u +%T)] $3: vllm bench', d['rate'], 'req/s', d['seconds'], 's: p95 TTFT', round(d['slo_values']['ttft_p95'] or -1), 'last half', round(d['last_half_slo_values']['ttft_p95'] or -1), 'completed/s', round(d['request_throughput'],2), 'held', d['held'])"; }
metr() { .venv/bin/python -c "import urllib.request as u; t=u.urlopen('$U/metrics').read().decode(); print('[$(date -u +%T)] $1', ' '.join(l for l in t.splitlines() if l.startswith(('vllm:num_requests_running','vllm:num_requests_waiting'))))"; }
echo "[$(date -u +%T)] ready"
vb 26 90 fresh
metr before-overload
.venv/bin/loadtest --url $U --model model --tokenizer $S/model --workload chat --output-tokens 64 --rate 37 --duration 60 --slo ttft_p95=2s --json /tmp/ao-overload.json > /tmp/ao-overload.log 2>&1
.venv/bin/python -c "
import json; d=json.load(open('/tmp/ao-overload.json')); print('[$(date -u +%T)] overload: slotune loadtest 37 req/s 60 s: completed/s', round(d['throughput_req_s'],2), 'p95 TTFT', d['ttft_ms'].get('p95'), 'failed', d['requests_failed'])"
metr after-overload
vb 26 90 right-after
sleep 60
metr after-idle
vb 26 90 after-60s-idle
echo "[$(date -u +%T)] done"
