#!/bin/bash
# Phase 1: this sitting's vLLM defaults, measured by tune (--trials 1 --predict: the model calibrated on them, nothing
# certified). SmolLM2-135M-Instruct, real weights served in float32, `edit`, ttft_p95=2s, VLLM_CPU_KVCACHE_SPACE=2.
# From a clean checkout CODE, under the CPU lock, with main's venv:  bash phase1.sh CODE OUT
set -u
code=$1 out=$2
cd "$code"
export VLLM_CPU_KVCACHE_SPACE=2 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'; date -u
/work/main/.venv/bin/python -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit \
  --dtype float32 --trials 1 --predict --soak-seconds 0 --out "$out/study" > "$out/tune.log" 2>&1
echo "tune exit $?"; date -u
