#!/bin/bash
# #24 G1 on a real model, third sitting (CPU levels past their cap up to 180 s) (SmolLM2-135M-Instruct, real weights, /tmp/smollm2 from tune make-model): five
# configurations not measured before, spread over the model's range (predict-before.txt, written first), every knob named, measured beside
# vLLM's defaults in one tune (search estimates, no soaks); then vllm bench serve at 1.0x the winner's rate for 180 s
# on a fresh launch.sh server. Run from a clean checkout in /tmp/rkc/code, under the CPU lock, with main's venv.
set -u
out=/tmp/rkc
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h %cd'
date -u
rest="max_model_len=3072,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
tries="max_num_seqs=8,max_num_batched_tokens=2048,$rest;max_num_seqs=32,max_num_batched_tokens=512,$rest"
tries="$tries;max_num_seqs=64,max_num_batched_tokens=4096,$rest;max_num_seqs=256,max_num_batched_tokens=1024,$rest"
tries="$tries;max_num_seqs=512,max_num_batched_tokens=2048,$rest"
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --soak-seconds 0 \
  --trials 6 --try-first "$tries" --out $out/rank > $out/rank.log 2>&1
echo "tune exit $?"; date -u
ln -sfn /work/main/.venv .venv
win=$($py -c "import json; print(round(json.load(open('$out/rank/best.json'))['best']['best_rate_req_s'], 3))" 2>/dev/null)
echo "winner's search estimate: $win"
RATE=$win bash scripts/cpu-crosscheck.sh $out/rank 1.0 180 $out/rank/crosscheck-vllm-bench-1.0x.json \
  > $out/crosscheck-1.0.out 2>&1
echo "cross-check 1.0x exit $?"; date -u
