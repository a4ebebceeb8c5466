#!/usr/bin/env bash
# vLLM's defaults against the 2026-12-06 rank study's winner (64 x 512, max_model_len 3072), one `tune` with the rule
# that soaks the defaults first at the winner's certified rate (the rate to beat). From a clean clone of CODE with a
# .venv link to main's, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash run.sh CODE OUT
set -u
code=$1 out=$2
cd "$code"
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
winner="max_num_seqs=64,max_num_batched_tokens=512,max_model_len=3072,enable_chunked_prefill=true"
winner="$winner,enable_prefix_caching=true,speculative_method=off"
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 2 --try-first "$winner" \
  --out "$out" > "$out.log" 2>&1
echo "tune exit $?"; date -u
