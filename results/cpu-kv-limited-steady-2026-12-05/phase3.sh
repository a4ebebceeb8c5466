#!/bin/bash
# Phase 3: vllm bench serve (bench/vllm_bench_check.py via scripts/cpu-crosscheck.sh) on fresh servers of the defaults
# with the KV cache pinned at TOKENS (1 KiB a token for the tiny Llama), at each RATE for 120 s.
#   bash phase3.sh TOKENS RATE [RATE ...]     (TOKENS 0: VLLM_CPU_KVCACHE_SPACE=1 as the study ran)
set -u
tokens=$1; shift
cd /work/main
d=/tmp/kvexp/kv-$tokens
mkdir -p $d
cp /tmp/kvexp/study/best.json $d/
if [ "$tokens" = 0 ]; then
  cp /tmp/kvexp/study/launch.sh $d/launch.sh
else
  sed -e '/^export VLLM_CPU_KVCACHE_SPACE=1$/d' \
      -e "s|^  --served-model-name tiny-llama \\\\$|  --served-model-name tiny-llama \\\\\n  --kv-cache-memory-bytes $((tokens * 1024)) \\\\|" \
      /tmp/kvexp/study/launch.sh > $d/launch.sh
fi
grep -n "kv-cache-memory\|KVCACHE" $d/launch.sh
for r in "$@"; do
  date -u
  RATE=$r bash scripts/cpu-crosscheck.sh $d 1.0 120 $d/bench-$r.json
  echo "exit $?"
  grep -h "KV cache size" $(ls -t /tmp/cpu-crosscheck-*.log | head -1) | tail -1
done
