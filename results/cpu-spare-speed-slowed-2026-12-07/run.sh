#!/usr/bin/env bash
# The tiny Llama's certified 32.529 req/s (../cpu-spare-speed-tiny-llama-2026-12-07: spare speed "less than 6.9 %
# slower", the model alone 20 %) under `vllm bench serve` for 120 s on fresh launch.sh servers run as on a host
# SLOW times slower (bench/slowed_host.py), each after a light probe as is and slowed (2 req/s, 40 s) that measures
# how much slower its steps ran. Run from the repo root under the CPU lock, nothing else running.
set -u
study=results/cpu-spare-speed-tiny-llama-2026-12-07/study
out=results/cpu-spare-speed-slowed-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "1.05 31" "1.10 31" "1.20 31" "1.05 32" "1.10 32" "- 32"; do
  read -r slow seed <<< "$run"
  name="slow${slow}-seed$seed"
  echo "[$(date -u +%T)] === $name"
  if [ "$slow" = - ]; then
    SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/$name.json"
  else
    SLOW=$slow PROBE=2:40 SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/$name.json"
  fi
done
echo "[$(date -u +%T)] all done"
