#!/bin/bash
# #24 G3 on vLLM-CPU, one sitting: (A) today's unguided search, 10 trials, its winner certified; then (B) tune --predict
# (<= 4 launches with the defaults), its winner certified. Same model, workload, SLO and soak length; wall seconds of each.
# Run from a clean clone in /tmp/g3cpu/code, under the CPU lock; main's venv (the clone's packages come first).
set -u
out=/tmp/g3cpu
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 10 --out $out/ten > $out/ten.log 2>&1
t1=$(date +%s); echo "A (10 trials, unguided) exit $?: $((t1 - t0)) s"; date -u
$py -m tuner.cli $common --trials 4 --predict --out $out/predict > $out/predict.log 2>&1
t2=$(date +%s); echo "B (--predict, <= 4 launches) exit $?: $((t2 - t1)) s"; date -u
