#!/usr/bin/env bash
# vLLM's defaults, certified 21.896 on two fresh servers: that rate under vLLM's own client for 120 s on a fresh
# launch.sh server. The first check (crosscheck-vllm-bench.json, crosscheck.out) ran the same steps written out here
# (f2e59e2); they now live in scripts/cpu-crosscheck.sh, whose run wrote crosscheck-vllm-bench-1.0x.json.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-certify-sustained-2026-12-03/crosscheck.sh
cd /work/main && exec bash scripts/cpu-crosscheck.sh results/cpu-certify-sustained-2026-12-03 1.0 120
