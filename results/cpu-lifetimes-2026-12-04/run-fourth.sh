#!/bin/bash
# #24 G3 on vLLM-CPU, the --predict side in the same sitting as run-ten.sh (code d797d3b, the measurement code of
# 1914b1f): the same tune --predict --trials 4 --certify best as run.sh, right after the unguided study ended; then
# vllm bench serve on its certified rate at 1.0x for 120 s on a fresh launch.sh server. Run from a clean checkout in
# /tmp/lt4/code, under the CPU lock, with main's venv.
set -u
out=/tmp/lt4
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 4 --predict --out $out/predict > $out/predict.log 2>&1
rc=$?; t1=$(date +%s); echo "tune --predict exit $rc: $((t1 - t0)) s"; date -u
ln -sfn /work/main/.venv .venv
bash scripts/cpu-crosscheck.sh $out/predict 1.0 120 > $out/crosscheck-1.0.out 2>&1
echo "cross-check 1.0x exit $?"; date -u
