#!/bin/bash
# #24 G1 on the real model: five configurations spread over the model's range (predict-before.txt, written and
# committed first), every knob of the space named, measured beside vLLM's defaults in one tune (the search's levels,
# nothing certified: six certifications do not fit a session on this VM). From a clean checkout CODE into OUT,
# under the CPU lock, with main's venv:
#   bash run.sh CODE OUT
set -u
code=$1 out=$2
cd $code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
rest="max_model_len=3072,enable_chunked_prefill=true,enable_prefix_caching=true,speculative_method=off"
tries="max_num_seqs=4,max_num_batched_tokens=2048,$rest;max_num_seqs=8,max_num_batched_tokens=512,$rest"
tries="$tries;max_num_seqs=16,max_num_batched_tokens=8192,$rest;max_num_seqs=32,max_num_batched_tokens=2048,$rest"
tries="$tries;max_num_seqs=64,max_num_batched_tokens=512,$rest"
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 6 --try-first "$tries" \
  --out $out > $out.log 2>&1
echo "tune exit $?"; date -u
