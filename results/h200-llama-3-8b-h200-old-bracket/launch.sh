#!/usr/bin/env bash
# slotune launch script — slotune: trial 0, ttft_p95=2s,tpot_p95=60ms, workload chat
# Tuned with vLLM 0.26.0 (/opt/torch/.venv/bin/python3); model /tmp/models/llama-3-8b; fingerprint sha256:cc348e86e6cd176d37a93a7b16e22e83ca82aaef1bb95c937b5e1d183a3fc4a6
# Usage: HOST=0.0.0.0 PORT=8000 bash launch.sh   (FORCE=1 skips the vLLM version check; VLLM_PYTHON overrides)
set -euo pipefail
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
PY="${VLLM_PYTHON:-/opt/torch/.venv/bin/python3}"
TUNED_VERSION=0.26.0
MODEL=/tmp/models/llama-3-8b
installed="$("$PY" -c 'import vllm; print(vllm.__version__)' 2>/dev/null || echo none)"
if [ "$installed" != "$TUNED_VERSION" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "launch.sh: vLLM $installed in $PY differs from the tuned $TUNED_VERSION; re-tune, or FORCE=1 to start anyway" >&2
  exit 2
fi
[ -d "$MODEL" ] || { echo "launch.sh: model folder $MODEL is missing" >&2; exit 2; }
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
"$PY" -m vllm.entrypoints.openai.api_server --model /tmp/models/llama-3-8b --served-model-name llama-3-8b --load-format dummy --seed 0 --host "$HOST" --port "$PORT" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server"' INT TERM
for _ in $(seq 1 1800); do
  if ! kill -0 "$server" 2>/dev/null; then wait "$server"; exit $?; fi
  if "$PY" -c "import urllib.request,sys; urllib.request.urlopen('http://'+sys.argv[1]+':'+sys.argv[2]+'/health', timeout=2)" \
       "$HOST" "$PORT" 2>/dev/null; then break; fi
  sleep 1
done
"$PY" - "$HOST" "$PORT" llama-3-8b <<'PYWARM'
import json, sys, urllib.request
host, port, name = sys.argv[1:4]
for _ in range(2):  # warm up: a cold first request is slow
    req = urllib.request.Request(f"http://{host}:{port}/v1/completions", method="POST",
        data=json.dumps({"model": name, "prompt": "hello", "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=300).read()
PYWARM
echo "ready: http://$HOST:$PORT (model $MODEL)"
wait "$server"
