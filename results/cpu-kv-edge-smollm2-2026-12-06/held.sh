#!/bin/bash
# The same study's held rate (before the KV-edge step) under `vllm bench serve`: 180 s on fresh launch.sh servers,
# one per seed in SEEDS (default 74 75 76), each with vLLM's gauge peaks. From the clean checkout CODE (run.sh's),
# under the CPU lock:   bash held.sh CODE OUT
set -u
code=$1 out=$2
cd $code
held=$(/work/main/.venv/bin/python -c "import json; print(json.load(open('$out/best.json'))['certifications'][0]['held_rate_req_s'])")
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
date -u; echo "held rate $held"
for seed in ${SEEDS:-74 75 76}; do
  RATE=$held SEED=$seed PORT=$((18200 + seed)) bash scripts/cpu-crosscheck.sh $out 1.0 180 \
    $out/crosscheck-vllm-bench-held-seed$seed.json > $out.crosscheck-held-$seed.out 2>&1
  echo "held cross-check seed $seed exit $?"; date -u
done
