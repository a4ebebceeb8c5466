#!/bin/bash
# G2 on the CPU: the committed grid's next three points (by its committed ranking) certified by the protocol of
# results/cpu-predict-vs-grid-best-2026-12-02 (steady levels, --certify each, 60-s soaks), beside the defaults.
cd /work/main
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat \
  --trials 4 --try-first "max_num_seqs=256,max_num_batched_tokens=512;max_num_seqs=64,max_num_batched_tokens=2048;max_num_seqs=256,max_num_batched_tokens=8192" \
  --certify each --soak-seconds 60 --out /tmp/g2b/grid3 > /tmp/g2b/grid3.log 2>&1
echo "grid3 tune exit $?"; date -u
