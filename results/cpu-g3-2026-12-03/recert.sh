#!/bin/bash
# B's certification again with b1d7484's floor (the study copied, its stored NOT-certified record of trial 3 removed)
set -u
cd /tmp/g3cpu/code2
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
t0=$(date +%s); date -u
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best \
  --trials 4 --predict --resume --out /tmp/g3cpu/recert > /tmp/g3cpu/recert.log 2>&1
rc=$?; t1=$(date +%s); echo "B's certification again exit $rc: $((t1 - t0)) s"; date -u
