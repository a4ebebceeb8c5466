#!/bin/bash
# One capacity search of vLLM's defaults (tiny Llama, chat, ttft_p95=2s, no certification) with the in-flight miss
# count (code: this checkout), to compare its lost levels' lengths with cpu-predict-sitting-2026-12-05-c's trial 0.
# Run from a clean checkout in /tmp/s11/code, under the CPU lock, with main's venv.
set -u
out=/tmp/s11
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
t0=$(date +%s); date -u
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --trials 1 --soak-seconds 0 --out $out/defaults > $out/defaults.log 2>&1
rc=$?; t1=$(date +%s); echo "tune exit $rc: $((t1 - t0)) s"; date -u
