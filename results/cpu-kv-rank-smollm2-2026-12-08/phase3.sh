#!/bin/bash
# Phase 3: vllm bench serve (bench/vllm_bench_check.py via scripts/cpu-crosscheck.sh) on a fresh server per rate:
# the study's launch.sh (vLLM's defaults) with configs.py NAME's flags added after --served-model-name (and, where
# the KV cache is pinned, without VLLM_CPU_KVCACHE_SPACE), each RATE for SECS seconds (150).
#   bash phase3.sh CODE OUT NAME RATE [RATE ...]     (under the CPU lock)
set -u
code=$1 out=$2 name=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
cd "$code"
d=$out/$name
mkdir -p "$d"
cp "$out/study/best.json" "$d/"
extra=$(python3 "$here/configs.py" "$name")
served=$(sed -n 's/^SERVED_NAME=//p' "$out/study/launch.sh" | head -1)
sed -e "s|^  --served-model-name $served \\\\\$|  --served-model-name $served $extra \\\\|" "$out/study/launch.sh" > "$d/launch.sh"
case "$extra" in *--kv-cache-memory-bytes*) sed -i '/^export VLLM_CPU_KVCACHE_SPACE=/d' "$d/launch.sh";; esac
grep -n -- "--served-model-name\|KVCACHE" "$d/launch.sh"
grep -q -- "--served-model-name $served $extra" "$d/launch.sh" || { echo "phase3: flags not placed"; exit 2; }
for r in "$@"; do
  date -u
  RATE=$r bash scripts/cpu-crosscheck.sh "$d" 1.0 "${SECS:-150}" "$d/bench-$r.json"
  echo "exit $?"
  grep -h "KV cache\|GPU KV\|num_gpu_blocks\|Maximum concurrency" "$(ls -t /tmp/cpu-crosscheck-*.log | head -1)" | tail -2
done
