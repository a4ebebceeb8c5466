#!/bin/bash
# Before/after the fresh server after a lost level (vLLM-CPU): SmolLM2-135M-Instruct (real weights, /tmp/smollm2 from
# tune make-model), `edit`, ttft_p95=2s; vLLM's defaults, then 512 x 2,048 (the third sitting's trial 5: search
# estimate 2.112, vllm bench held 2.685), `tune --trials 2`, search estimates, no soaks. CROSS=1: then vllm bench
# serve at 1.0 x trial 1's estimate for 180 s on a fresh launch.sh server. From a clean checkout CODE into OUT,
# under the CPU lock, with main's venv: [CROSS=1] bash run.sh CODE OUT
set -u
code=$1 out=$2
cd $code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$code
git log -1 --format='code %h %cd'
date -u
rest="max_model_len=3072,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
$py -m tuner.cli --model /tmp/smollm2 --gpu cpu --slo ttft_p95=2s --workload edit --soak-seconds 0 \
  --trials 2 --try-first "max_num_seqs=512,max_num_batched_tokens=2048,$rest" --out $out > $out.log 2>&1
echo "tune exit $?"; date -u
if [ "${CROSS:-0}" = 1 ]; then
  ln -sfn /work/main/.venv .venv
  rate=$($py -c "import csv; print([round(float(r['best_rate_req_s']), 3) for r in csv.DictReader(open('$out/trials.csv')) if r['number'] == '1'][0])")
  echo "trial 1's search estimate: $rate"
  TRIAL=1 RATE=$rate bash scripts/cpu-crosscheck.sh $out 1.0 180 $out/crosscheck-vllm-bench-trial1-1.0x.json \
    > $out.crosscheck.out 2>&1
  echo "cross-check exit $?"; date -u
fi
