#!/bin/bash
# One tune of SmolLM2's vLLM defaults (--trials 1, search estimates, no soaks), from a clean checkout CODE, into OUT.
# Run under the CPU lock with main's venv: bash run-one.sh CODE OUT
set -u
code=$1 out=$2
cd $code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --soak-seconds 0 \
  --trials 1 --out $out > $out.log 2>&1
echo "tune exit $?"; date -u
