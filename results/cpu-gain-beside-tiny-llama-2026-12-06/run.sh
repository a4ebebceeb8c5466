#!/usr/bin/env bash
# A fresh run with the soak beside the defaults (tuner.certify.gain_check). vLLM's defaults against 512 sequences x 8,192 batched tokens (max_model_len 1280) on the tiny random Llama, which
# certified 31 % above the defaults on 2026-12-03 (../cpu-predict-rank-2026-12-03): one `tune` with the rule that soaks
# the defaults first at the best's certified rate (the rate to beat). From a clean clone of CODE with a .venv link to
# main's, under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash run.sh CODE OUT
set -u
code=$1 out=$2
cd "$code"
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
[ -d /tmp/tiny-llama ] || $py -m tuner.cli make-model --shape llama-tiny --out /tmp/tiny-llama
rest="max_model_len=1280,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
$py -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --trials 2 \
  --try-first "max_num_seqs=512,max_num_batched_tokens=8192,$rest" --out "$out" > "$out.log" 2>&1
echo "tune exit $?"; date -u
