#!/bin/bash
# The unjudged-soak hint (2ea0d68) live: SmolLM2 (real weights, /tmp/smollm2), `edit`, ttft_p95=2s, vLLM's defaults
# only (--trials 1), certified with 30-s soaks (at most 60 s) where requests live 20-30 s. Run from a clean checkout in
# /tmp/hint/code under the CPU lock, with main's venv; stopped by SIGINT after 21 minutes if not done.
set -u
out=/tmp/hint
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
t0=$(date +%s); date -u
timeout --signal=INT --kill-after=30 1260 $py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s \
  --workload edit --trials 1 --soak-seconds 30 --certify best --out $out/study > $out/tune.log 2>&1
echo "tune exit $?: $(( $(date +%s) - t0 )) s"; date -u
