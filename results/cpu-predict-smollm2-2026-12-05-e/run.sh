#!/bin/bash
# tune --predict on SmolLM2-135M-Instruct (real weights, built by tune make-model into /tmp/smollm2), `edit`,
# ttft_p95=2s, then vllm bench serve on the certified rate at 1.0x and 1.2x for 120 s, each on a fresh launch.sh
# server. Run from a clean checkout in /tmp/s13/code, under the CPU lock, with main's venv.
set -u
out=/tmp/s13
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
common="--model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --soak-seconds 120 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 4 --predict --out $out/predict > $out/predict.log 2>&1
rc=$?; t1=$(date +%s); echo "tune --predict exit $rc: $((t1 - t0)) s"; date -u
ln -sfn /work/main/.venv .venv
for f in 1.0 1.2; do
  bash scripts/cpu-crosscheck.sh $out/predict $f 120 > $out/crosscheck-$f.out 2>&1
  echo "cross-check ${f}x exit $?"; date -u
done
