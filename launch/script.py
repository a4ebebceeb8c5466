"""Freeze a measured configuration into ``launch.sh`` (and the equivalent ``docker run``).

The script starts exactly what was measured: the argv comes from ``launch.command.build_command``
with the same VllmInfo, every value passes through ``shlex.quote`` (a model path with spaces,
quotes or ``$(...)`` stays literal), and only ``HOST``/``PORT`` are read at run time.

launch.sh, at run time:
1. ``VLLM_PYTHON`` (default: the interpreter it was tuned with) must have the tuned vLLM version,
   else it refuses to start (exit 3) unless ``FORCE=1``.
2. It recomputes the model fingerprint (``launch.fingerprint.hash_model_dir``, embedded, standard
   library only; ~1 s per GB) and refuses on a mismatch (exit 4) unless ``FORCE=1``;
   ``VERIFY_MODEL=0`` skips this (it prints that it did).
3. It exports the tuned environment, starts a small watcher in the background and ``exec``s vLLM
   in the foreground, so signals (Ctrl-C, ``docker stop``, systemd) reach vLLM directly. The watcher
   waits for ``/health`` (``READY_TIMEOUT``, default 900 s; on timeout it stops the server so the
   script exits non-zero), sends ``WARMUP_REQUESTS`` completions (default 2) and prints
   "ready: http://HOST:PORT ...".
"""

from __future__ import annotations

import inspect
import shlex
import time
from dataclasses import replace
from pathlib import Path

from launch.command import build_command, env_to_unset
from launch.config import ServeConfig
from launch.fingerprint import hash_model_dir
from launch.parallel import device_block
from launch.vllm_info import API_SERVER, VllmInfo

_HOST_SENTINEL = "__SLOTUNE_HOST__"
_PORT_SENTINEL = 65599  # not a valid port: cannot collide with a real value
DOCKER_IMAGE = "vllm/vllm-openai"
CONTAINER_MODEL_DIR = "/model"
CONTAINER_DRAFT_DIR = "/draft"

_VERSION_PY = """import importlib.metadata as m
d = (m.packages_distributions().get("vllm") or ["vllm"])[0]
print(m.version(d))"""

_WATCHER_PY = """import json, os, signal, sys, time, urllib.request
host, port, name = sys.argv[1], sys.argv[2], sys.argv[3]
n, timeout, pid = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
shown = host
if host in ("", "0.0.0.0", "::"):
    host = "127.0.0.1"
base = "http://%s:%s" % ("[%s]" % host if ":" in host else host, port)
def alive(pid):  # a zombie (exited, not yet reaped by whoever started launch.sh) is dead
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
def ours_alive():  # the server answering must be the one this script started
    if not alive(pid):
        print("launch.sh: vLLM exited before it was ready; its log is above", file=sys.stderr)
        sys.exit(1)
t0 = time.time()
while True:
    ours_alive()
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as r:
            if r.status == 200:
                break
    except Exception:
        pass
    if time.time() - t0 > timeout:
        print("launch.sh: no answer on %s/health after %.0f s; stopping the server" % (base, timeout),
              file=sys.stderr)
        os.kill(pid, signal.SIGTERM)
        sys.exit(1)
    time.sleep(1)
body = json.dumps({"model": name, "prompt": "Warm up the server.", "max_tokens": 8,
                   "temperature": 0}).encode()
for i in range(n):
    try:
        req = urllib.request.Request(base + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=600).read()
    except Exception as e:
        print("launch.sh: warmup request %d failed: %r" % (i + 1, e), file=sys.stderr)
ours_alive()
print("ready: http://%s:%s serves %r (%.0f s)" % (shown, port, name, time.time() - t0), flush=True)"""

# exit 5 when another process listens on HOST:PORT (binding with SO_REUSEADDR, as vLLM's server does)
_PORT_FREE_PY = """import errno, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
except socket.gaierror:
    sys.exit(0)  # vLLM names an unknown host itself
family, kind, proto, _, addr = infos[0]
with socket.socket(family, kind, proto) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(addr)
    except OSError as e:
        sys.exit(5 if e.errno == errno.EADDRINUSE else 0)"""


def _shell_argv(argv: list[str]) -> str:
    """Quoted argv, one flag (with its value) per continued line; HOST/PORT stay variables."""
    words = []
    for i, tok in enumerate(argv):
        if tok == _HOST_SENTINEL and argv[i - 1] == "--host":
            words.append('"$HOST"')
        elif tok == str(_PORT_SENTINEL) and argv[i - 1] == "--port":
            words.append('"$PORT"')
        else:
            words.append(shlex.quote(tok))
    lines: list[list[str]] = []
    for i, word in enumerate(words):
        if lines and not (argv[i].startswith("-") and i > 0) and len(lines[-1]) == 1 and argv[i - 1].startswith("-"):
            lines[-1].append(word)
        else:
            lines.append([word])
    return " \\\n  ".join(" ".join(line) for line in lines)


def render_launch_script(
    config: ServeConfig, info: VllmInfo, *, fingerprint: str, model_dir: str, note: str = "", nice: int = 0
) -> str:
    """The text of launch.sh for ``config`` served from ``model_dir`` by ``info``'s vLLM. ``nice``: the
    niceness the server was measured at beside its load generator (the cpu profile's), applied by default."""
    config = replace(config, model=model_dir)
    argv, env = build_command(config, info, host=_HOST_SENTINEL, port=_PORT_SENTINEL)
    q = shlex.quote
    name = config.served_model_name or model_dir
    notes = "".join(f"# {line}\n" for line in note.splitlines())
    exports = "".join(f"unset {k}\n" for k in env_to_unset(config, info))
    exports += "".join(f"export {k}={q(v)}\n" for k, v in sorted(env.items()))
    cmd = '"$VLLM_PYTHON" ' + _shell_argv(argv[1:])
    return f"""#!/usr/bin/env bash
# Generated by slotune on {time.strftime("%Y-%m-%d %H:%M:%S %Z")}: starts vLLM exactly as measured.
# vLLM {info.version!r} ({info.distribution}, {info.platform}) via {info.python!r}
# Model: {model_dir!r}
# Model fingerprint (sha256 over config, tokenizer, weights index and weight contents): {fingerprint}
{notes}#
# Environment: HOST (default 127.0.0.1), PORT (default 8000), VLLM_PYTHON (default: the tuned
# interpreter), FORCE=1 (start despite a different vLLM version or model fingerprint),
# VERIFY_MODEL=0 (skip re-hashing the model), READY_TIMEOUT (s, default 900),
# WARMUP_REQUESTS (default 2), NICE (default {nice}: the niceness the server was measured at; on a machine
# shared with its clients, a busy-polling vLLM at equal priority delays them).
set -euo pipefail

HOST="${{HOST:-127.0.0.1}}"
PORT="${{PORT:-8000}}"
TUNED_PYTHON={q(info.python)}
VLLM_PYTHON="${{VLLM_PYTHON:-$TUNED_PYTHON}}"
TUNED_VLLM_VERSION={q(info.version)}
MODEL_DIR={q(model_dir)}
MODEL_FINGERPRINT={q(fingerprint)}
SERVED_NAME={q(name)}
FORCE="${{FORCE:-0}}"
VERIFY_MODEL="${{VERIFY_MODEL:-1}}"
READY_TIMEOUT="${{READY_TIMEOUT:-900}}"
WARMUP_REQUESTS="${{WARMUP_REQUESTS:-2}}"
NICE="${{NICE:-{nice}}}"

if ! installed="$("$VLLM_PYTHON" - <<'SLOTUNE_PY'
{_VERSION_PY}
SLOTUNE_PY
)"; then
  echo "launch.sh: $VLLM_PYTHON cannot report a vLLM version;" \\
       "set VLLM_PYTHON to the interpreter with vLLM $TUNED_VLLM_VERSION" >&2
  exit 2
fi
if [ "$installed" != "$TUNED_VLLM_VERSION" ]; then
  if [ "$FORCE" != 1 ]; then
    echo "launch.sh: tuned with vLLM $TUNED_VLLM_VERSION but $VLLM_PYTHON has $installed;" \\
         "re-tune, or set FORCE=1 to start anyway" >&2
    exit 3
  fi
  echo "launch.sh: WARNING: vLLM $installed differs from the tuned $TUNED_VLLM_VERSION (FORCE=1)" >&2
fi

if [ "$VERIFY_MODEL" = 1 ]; then
  actual="$("$VLLM_PYTHON" - "$MODEL_DIR" <<'SLOTUNE_PY'
from __future__ import annotations
import os
import sys
{inspect.getsource(hash_model_dir)}
print(hash_model_dir(sys.argv[1]))
SLOTUNE_PY
)"
  if [ "$actual" != "$MODEL_FINGERPRINT" ]; then
    if [ "$FORCE" != 1 ]; then
      echo "launch.sh: the model in $MODEL_DIR changed since tuning" \\
           "(fingerprint $actual, tuned $MODEL_FINGERPRINT); re-tune, or set FORCE=1" >&2
      exit 4
    fi
    echo "launch.sh: WARNING: model fingerprint differs from the tuned one (FORCE=1)" >&2
  fi
else
  echo "launch.sh: VERIFY_MODEL=0: not checking that $MODEL_DIR is the tuned model" >&2
fi

case "$PORT" in
  ''|*[!0-9]*) echo "launch.sh: PORT=$PORT is not a port number; set PORT to one from 1 to 65535" >&2; exit 2 ;;
esac
if [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  echo "launch.sh: PORT=$PORT is out of range; set PORT to one from 1 to 65535" >&2
  exit 2
fi
port_check=0
"$VLLM_PYTHON" - "$HOST" "$PORT" <<'SLOTUNE_PY' || port_check=$?
{_PORT_FREE_PY}
SLOTUNE_PY
if [ "$port_check" = 5 ]; then
  echo "launch.sh: another process already listens on $HOST:$PORT; stop it, or set PORT to a free port" >&2
  exit 5
fi

{device_block(config)}{exports}
if [ "$NICE" -gt 0 ]; then  # this shell, the watcher and vLLM (exec'd below); the session too where grouped
  renice -n "$NICE" -p $$ >/dev/null 2>&1 \
    || echo "launch.sh: cannot set niceness $NICE (an unprivileged user cannot lower it); running at $(nice)" >&2
  if ! {{ echo "$NICE" > /proc/self/autogroup; }} 2>/dev/null; then
    echo "launch.sh: niceness $NICE for this process only (no session autogroup here)" >&2
  fi
fi
"$VLLM_PYTHON" - "$HOST" "$PORT" "$SERVED_NAME" "$WARMUP_REQUESTS" "$READY_TIMEOUT" "$$" <<'SLOTUNE_PY' &
{_WATCHER_PY}
SLOTUNE_PY

exec {cmd}
"""


def write_launch_script(
    path: str | Path,
    config: ServeConfig,
    info: VllmInfo,
    *,
    fingerprint: str,
    model_dir: str,
    note: str = "",
    nice: int = 0,
) -> Path:
    """Write launch.sh (mode 0755) and return its path."""
    path = Path(path)
    path.write_text(
        render_launch_script(config, info, fingerprint=fingerprint, model_dir=model_dir, note=note, nice=nice)
    )
    path.chmod(0o755)
    return path


def container_command(
    config: ServeConfig, info: VllmInfo, *, container_port: int = 8000
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(args after ``python3``, env, {host dir: container dir}) for the vllm-openai image.

    The model (and a speculative draft model) are mounted read-only at /model (/draft).
    """
    mounts = {config.model: CONTAINER_MODEL_DIR}
    inside = replace(config, model=CONTAINER_MODEL_DIR, served_model_name=config.served_model_name or config.model)
    if config.speculative_model is not None and Path(config.speculative_model).is_absolute():
        mounts[config.speculative_model] = CONTAINER_DRAFT_DIR
        inside = replace(inside, speculative_model=CONTAINER_DRAFT_DIR)
    if config.tokenizer is not None and Path(config.tokenizer).is_absolute():
        mounts[config.tokenizer] = "/tokenizer"
        inside = replace(inside, tokenizer="/tokenizer")
    in_info = replace(info, platform="cuda", python="python3")
    argv, env = build_command(inside, in_info, host="0.0.0.0", port=container_port)
    return argv[1:], env, mounts


def docker_image(info: VllmInfo) -> str:
    return f"{DOCKER_IMAGE}:v{info.version}"


def docker_run_command(
    config: ServeConfig,
    info: VllmInfo,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    gpus: str = "all",
    image: str | None = None,
) -> str:
    """The ``docker run`` line equivalent to launch.sh (vllm/vllm-openai image of the same version)."""
    args, env, mounts = container_command(config, info)
    q = shlex.quote
    if gpus == "all" and config.gpus > 1:  # the layout's GPUs, as many as measured
        gpus = str(config.gpus)
    parts = ["docker run --rm --ipc=host", f"--gpus {q(gpus)}", f"-p {q(f'{host}:{port}:8000')}"]
    parts += [f"-v {q(f'{src}:{dst}:ro')}" for src, dst in mounts.items()]
    parts += [f"-e {q(f'{k}={v}')}" for k, v in sorted(env.items())]
    parts += ["--entrypoint python3", q(image or docker_image(info))]
    parts += [q(a) for a in args]
    return " ".join(parts)


__all__ = [
    "API_SERVER",
    "container_command",
    "docker_image",
    "docker_run_command",
    "render_launch_script",
    "write_launch_script",
]
