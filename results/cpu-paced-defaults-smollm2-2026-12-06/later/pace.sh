#!/bin/bash
cd /tmp/xc
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
date -u
.venv/bin/python bench/pace_spread.py --best results/cpu-paced-defaults-smollm2-2026-12-06/best.json --servers 2 --timings 3 --json /tmp/xc-out/pace-after.json
echo "pace exit $?"; date -u
