"""launch.sh: the frozen, verified configuration as a bash script (and the equivalent docker run)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from launch.command import build_command
from launch.config import ServeConfig
from launch.vllm_info import VllmInfo

TEMPLATE = r"""#!/usr/bin/env bash
# slotune launch script — {note}
# Tuned with vLLM {version} ({python}); model {model_q}; fingerprint {fingerprint}
# Usage: HOST=0.0.0.0 PORT=8000 bash launch.sh   (FORCE=1 skips the vLLM version check; VLLM_PYTHON overrides)
set -euo pipefail
HOST="${{HOST:-127.0.0.1}}"
PORT="${{PORT:-8000}}"
PY="${{VLLM_PYTHON:-{python_q}}}"
TUNED_VERSION={version_q}
MODEL={model_q}
installed="$("$PY" -c 'import vllm; print(vllm.__version__)' 2>/dev/null || echo none)"
if [ "$installed" != "$TUNED_VERSION" ] && [ "${{FORCE:-0}}" != 1 ]; then
  echo "launch.sh: vLLM $installed in $PY differs from the tuned $TUNED_VERSION; re-tune, or FORCE=1 to start anyway" >&2
  exit 2
fi
[ -d "$MODEL" ] || {{ echo "launch.sh: model folder $MODEL is missing" >&2; exit 2; }}
{env}
"$PY" {args} --host "$HOST" --port "$PORT" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server"' INT TERM
for _ in $(seq 1 {timeout}); do
  if ! kill -0 "$server" 2>/dev/null; then wait "$server"; exit $?; fi
  if "$PY" -c "import urllib.request,sys; urllib.request.urlopen('http://'+sys.argv[1]+':'+sys.argv[2]+'/health', timeout=2)" \
       "$HOST" "$PORT" 2>/dev/null; then break; fi
  sleep 1
done
"$PY" - "$HOST" "$PORT" {served_q} <<'PYWARM'
import json, sys, urllib.request
host, port, name = sys.argv[1:4]
for _ in range(2):  # warm up: a cold first request is slow
    req = urllib.request.Request(f"http://{{host}}:{{port}}/v1/completions", method="POST",
        data=json.dumps({{"model": name, "prompt": "hello", "max_tokens": 4}}).encode(),
        headers={{"Content-Type": "application/json"}})
    urllib.request.urlopen(req, timeout=300).read()
PYWARM
echo "ready: http://$HOST:$PORT (model $MODEL)"
wait "$server"
"""


def render_launch_script(config: ServeConfig, info: VllmInfo, *, fingerprint: str, model_dir: str,
                         note: str = "", startup_timeout_s: int = 1800) -> str:
    argv, env = build_command(config, info, host="HOSTPLACEHOLDER", port=0)
    args = argv[1:]
    cut = args.index("--host")
    args = args[:cut] + args[cut + 4:]
    env_lines = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return TEMPLATE.format(note=note.replace("\n", " "), version=info.version, python=info.python,
                           model_q=shlex.quote(model_dir), fingerprint=fingerprint, python_q=shlex.quote(info.python),
                           version_q=shlex.quote(info.version), env=env_lines,
                           args=" ".join(shlex.quote(a) for a in args), timeout=startup_timeout_s,
                           served_q=shlex.quote(config.name))


def write_launch_script(path: Path, config: ServeConfig, info: VllmInfo, **kw: object) -> None:
    text = render_launch_script(config, info, **kw)  # type: ignore[arg-type]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
