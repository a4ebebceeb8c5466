#!/bin/bash
# Phase 1: a fresh sitting's defaults, measured by tune (--trials 1 --predict: the model calibrated on them).
set -u
out=/tmp/kvexp
cd /work/main
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h'
date -u
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat \
  --trials 1 --predict --soak-seconds 0 --out $out/study > $out/tune.log 2>&1
echo "tune exit $?"; date -u
