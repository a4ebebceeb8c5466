#!/bin/bash
# #24 G3 on vLLM-CPU with this checkout's code, one pair back to back on one host: tune --predict --trials 4, then the
# unguided 10-trial study, each to a certified winner (--certify best, 60-s soaks), the command of
# results/cpu-g3-2026-12-05; then vllm bench serve at 1.0x each winner's certified rate (120 s, fresh launch.sh
# servers) and bench/time_to_certified.py on both logs. Run from a clean checkout in /tmp/g3b/code, under the CPU lock,
# with main's venv (the checkout's packages come first).
set -u
out=/tmp/g3b
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best"
t0=$(date +%s); date -u
$py -m tuner.cli $common --trials 4 --predict --out $out/predict > $out/predict.log 2>&1
rc=$?; t1=$(date +%s); echo "tune --predict exit $rc: $((t1 - t0)) s"; date -u
$py -m tuner.cli $common --trials 10 --out $out/ten > $out/ten.log 2>&1
rc=$?; t2=$(date +%s); echo "10 trials, unguided, exit $rc: $((t2 - t1)) s"; date -u
ln -sfn /work/main/.venv .venv
for s in predict ten; do
  bash scripts/cpu-crosscheck.sh $out/$s 1.0 120 > $out/crosscheck-$s-1.0.out 2>&1
  echo "cross-check $s 1.0x exit $?"; date -u
done
$py bench/time_to_certified.py $out/ten.log > $out/time-ten.txt
ten_s=$(sed -n 's/^tune calls *\([0-9]*\) s$/\1/p' $out/time-ten.txt)
$py bench/time_to_certified.py $out/predict.log --against "$ten_s" > $out/time-predict.txt
cat $out/time-ten.txt $out/time-predict.txt
