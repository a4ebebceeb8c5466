#!/bin/bash
# After the resumed call: `vllm bench serve` at the study's stated 32.529 req/s for 120 s on a fresh launch.sh server
# (seed 31, as in ../cpu-spare-speed-tiny-llama-2026-12-07), on this session's host. Run from the repo root under the
# CPU lock.
set -u
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
SEED=31 bash scripts/cpu-crosscheck.sh results/cpu-challenger-tiny-llama-2026-12-07/study 1.0 120 \
  results/cpu-challenger-tiny-llama-2026-12-07/bench-best-seed31.json
