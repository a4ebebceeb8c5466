#!/bin/bash
# The same resumed call again, after the first (run.sh) stopped on a NameError in the challenger's console line once
# vLLM's defaults were certified (kept in the study: this call goes on from there). Usage as run.sh.
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
t0=$(date +%s); date -u
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify all --trials 4 \
  --predict --out "$here/study" --resume --vllm-python /work/main/.venv/bin/python > "$here/study/tune.log" 2>&1
echo "tune --resume --certify all exit $?: $(( $(date +%s) - t0 )) s"; date -u
