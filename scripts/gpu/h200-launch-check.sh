#!/usr/bin/env bash
# launch.sh's and an export's start-up checks (launch.machine, launch.pace) on the GPU test machine. Runs from the repo
# root after staging (scripts/gpu/h200-predict.sh's parts; ARG 0: staging only):
#   bash scripts/gpu/h200-launch-check.sh 1 DIR
# DIR holds a study's launch.sh and its `tune export --format compose` file (compose.yaml). Starts, one after another,
# each until ready and then stops it: launch.sh with MEASURED_PACE=$PACE_LOW (a pace more than 2x faster than this
# card's: the watcher must warn), launch.sh with MEASURED_PACE=$PACE_SAME (this card's own: it must not), and the
# Compose service's entrypoint + command run directly (no Docker there; /model read as the bind's source). FORCE=1:
# the model is rebuilt config-only here, and its tokenizer's serialization may differ from the study's machine's.
# Writes $OUT/<name>.txt (each start's output) and $OUT/gpu.txt.
set -uo pipefail
T0=$(date +%s)
log() { echo "[launch-check $(( $(date +%s) - T0 ))s $(date -u +%H:%M:%SZ)] $*"; }
source scripts/gpu/h200-stage.sh
stage_vllm || exit 0
[ "${1:-0}" = 0 ] && exit 0
dir="${2:?DIR with launch.sh and compose.yaml}"
source scripts/gpu/h200-env.sh
out="${OUT:-/tmp/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
healthy() { python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/health', timeout=2)" 2>/dev/null; }
start_until_ready() {  # NAME LIMIT_S CMD...: run CMD in its own session until ready (launch.sh: "ready:"), then stop it
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s)
  setsid "$@" > "$out/$name.txt" 2>&1 &
  local pid=$!
  until grep -q "^ready:" "$out/$name.txt" || { [ "$name" = compose ] && healthy; }; do
    kill -0 "$pid" 2>/dev/null || { log "$name exited"; break; }
    [ $(( $(date +%s) - t0 )) -lt "$limit" ] || { log "$name not ready after $limit s"; break; }
    sleep 1
  done
  sleep 3  # the watcher's last lines
  log "$name: $(( $(date +%s) - t0 )) s; stopping it"
  kill -TERM -- -"$pid" 2>/dev/null; sleep 8; kill -KILL -- -"$pid" 2>/dev/null
  grep -E "WARNING|ready:|launch.sh:|slotune" "$out/$name.txt" | cut -c1-400
}
common=(env FORCE=1 VLLM_PYTHON=python3 PORT=8000)
start_until_ready launch-sh-pace-low 400 "${common[@]}" MEASURED_PACE="${PACE_LOW:-3.0}" bash "$dir/launch.sh"
start_until_ready launch-sh-pace-same 200 "${common[@]}" MEASURED_PACE="${PACE_SAME:-6.45}" bash "$dir/launch.sh"
python3 - "$dir/compose.yaml" "$model" > /tmp/compose-argv <<'PY'
import sys, yaml
svc = next(iter(yaml.safe_load(open(sys.argv[1]))["services"].values()))
argv = [a if a != "/model" else sys.argv[2] for a in svc["entrypoint"] + svc["command"]]
env = [f"{k}={v}" for k, v in (svc.get("environment") or {}).items()]
sys.stdout.write("\0".join(["env", *env, *argv]) + "\0")
PY
mapfile -d '' compose_argv < /tmp/compose-argv
start_until_ready compose 200 "${compose_argv[@]}"
log "done"
