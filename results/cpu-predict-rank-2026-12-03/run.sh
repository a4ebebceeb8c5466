#!/bin/bash
# #24 G1 on the CPU: five configurations spread over the model's range (predict-before.txt, written first), every knob
# named, certified beside vLLM's defaults in one tune (--certify each, 60-s soaks, a rate held on two fresh servers).
cd /tmp/g24r/code
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
rest="max_model_len=1280,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
tries="max_num_seqs=32,max_num_batched_tokens=2048,$rest;max_num_seqs=64,max_num_batched_tokens=512,$rest"
tries="$tries;max_num_seqs=128,max_num_batched_tokens=512,$rest;max_num_seqs=256,max_num_batched_tokens=512,$rest"
tries="$tries;max_num_seqs=512,max_num_batched_tokens=8192,$rest"
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify each \
  --soak-seconds 60 --trials 6 --try-first "$tries" --out /tmp/g24r/rank > /tmp/g24r/rank.log 2>&1
echo "tune exit $?"; date -u
