#!/usr/bin/env bash
# The pace (launch/pace.py: one fixed request alone after the warm-up) on the GPU test machine: how much it varies
# between fresh servers of one configuration, which sets launch.sh's tolerance there. Runs from the repo root:
#   bash scripts/gpu/h200-pace.sh SERVERS DEADLINE_S TAG
# Serves run f's winner as its launch.sh does (PACE_BEST, default results/h200-llama-3-8b-a30-predict-2026-12-03-f/
# best.json: the A30's memory emulated by its KV pin, Llama-3-8B shape, random weights), SERVERS fresh servers one
# after another, none started that would not be up before DEADLINE_S; writes $OUT/pace-spread-TAG.{txt,json} and
# $OUT/gpu.txt. Staging as scripts/gpu/h200-predict.sh (SERVERS 0: staging only).
set -uo pipefail
servers="${1:-3}" deadline="${2:-480}" tag="${3:-1}"
T0=$(date +%s)
log() { echo "[h200-pace $(( $(date +%s) - T0 ))s $(date -u +%H:%M:%SZ)] $*"; }
source scripts/gpu/h200-stage.sh
stage_vllm || exit 0
[ "$servers" = 0 ] && exit 0
source scripts/gpu/h200-env.sh
out="${OUT:-/tmp/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
log "pace spread: $servers servers, deadline ${deadline} s"
python3 bench/pace_spread.py --best "${PACE_BEST:-results/h200-llama-3-8b-a30-predict-2026-12-03-f/best.json}" \
  --servers "$servers" --timings 3 --nice 0 --deadline-s "$deadline" --json "$out/pace-spread-$tag.json" \
  2>&1 | tee "$out/pace-spread-$tag.txt"
log "done"
