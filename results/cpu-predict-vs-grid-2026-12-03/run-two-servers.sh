#!/bin/bash
# The two-server certification on the CPU: the configuration whose one-soak certificate (19.875) missed on the next
# two fresh servers, certified again beside vLLM's defaults, every knob named (--certify each, 60-s soaks).
cd /tmp/g2e/code
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
winner="max_model_len=1280,max_num_seqs=512,max_num_batched_tokens=8192,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify each \
  --soak-seconds 60 --trials 2 --try-first "$winner" --out /tmp/g2e/two-servers > /tmp/g2e/two-servers.log 2>&1
echo "tune exit $?"; date -u
