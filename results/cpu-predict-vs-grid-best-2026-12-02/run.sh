#!/bin/bash
# G2 on the CPU, like for like: tune --predict (<= 4 launches, the defaults included) on the committed grid's
# workload and SLO, then the committed grid's best point (256 seqs x 2,048 tokens) certified by the same protocol.
cd /work/main
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat \
  --trials 4 --predict --certify each --soak-seconds 60 --out /tmp/g2/predict > /tmp/g2/predict.log 2>&1
echo "predict tune exit $?"; date -u
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat \
  --trials 2 --try-first "max_num_seqs=256,max_num_batched_tokens=2048" --certify each --soak-seconds 60 \
  --out /tmp/g2/gridbest > /tmp/g2/gridbest.log 2>&1
echo "grid-best tune exit $?"; date -u
