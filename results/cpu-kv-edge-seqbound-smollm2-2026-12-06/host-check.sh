#!/bin/bash
# Is this host as fast as the one the study ran on? The same draw again: trial 1 (64 x 512) at its stated 1.851 req/s
# with seed 81, 180 s, a fresh launch.sh server (run.sh's first cross-check, which held with p95 TTFT 567 ms and vLLM's
# mean inter-token latency 117.7 ms on the study's host). From a clean checkout CODE, under the CPU lock:
#   bash host-check.sh CODE OUT
set -u
code=$1 out=$2
cd $code
ln -sfn /work/main/.venv .venv
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'; date -u; lscpu | grep -E "Model name|^CPU\(s\)"; grep -m1 bogomips /proc/cpuinfo
rate=$(.venv/bin/python -c "import json; print(next(c['certified_rate_req_s'] for c in json.load(open('$out/best.json'))['certifications'] if c['trial'] == 1))")
TRIAL=1 RATE=$rate SEED=81 PORT=18281 bash scripts/cpu-crosscheck.sh $out 1.0 180 \
  $out/host-check-trial1-1.0x-seed81.json > $out.host-check.out 2>&1
echo "host check exit $?"; date -u
