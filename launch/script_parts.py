"""The fixed parts of launch.sh: the guards run before vLLM starts (the tuned vLLM version, the model's
fingerprint, a free port) and the watcher started beside it (waits for /health, warms up, prints
"ready:"). The embedded Python uses the standard library only: it runs under any interpreter."""

from __future__ import annotations

import inspect

from launch.fingerprint import hash_model_dir
from launch.machine import MACHINE_CHECK_PY
from launch.pace import PACE_SOURCE

VERSION_PY = """import importlib.metadata as m
d = (m.packages_distributions().get("vllm") or ["vllm"])[0]
print(m.version(d))"""

# argv: host, port, served name, warm-up requests, ready timeout, launch.sh's pid, the pace measured ("": none),
# launch.sh's folder, the slowdown that warns (launch.pace.pace_tolerance)
WATCHER_PY = (
    """from __future__ import annotations
import json, os, signal, sys, time, urllib.request
"""
    + PACE_SOURCE
    + """
host, port, name = sys.argv[1], sys.argv[2], sys.argv[3]
n, timeout, pid = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
pace_arg = sys.argv[7] if len(sys.argv) > 7 else ""
measured_pace, folder = (float(pace_arg) if pace_arg else None), (sys.argv[8] if len(sys.argv) > 8 else ".")
tolerance = float(sys.argv[9]) if measured_pace else None
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
if measured_pace:  # this machine's pace for this configuration, against the study's (launch.pace)
    here_pace = pace_ms_per_token(base, name)
    differs = slower(measured_pace, here_pace, tolerance)
    if differs:
        print("launch.sh: WARNING: %s: the capacity above was not measured at this pace; re-verify it on this "
              "machine: tune retune --study %s" % (differs, folder), file=sys.stderr, flush=True)
    elif here_pace is not None:  # the figure an operator compares, said either way
        print("launch.sh: " + within(measured_pace, here_pace, tolerance), file=sys.stderr, flush=True)
    else:  # not timed: say so, rather than let silence read as "the pace matched"
        print("launch.sh: WARNING: " + untimed(measured_pace), file=sys.stderr, flush=True)
print("ready: http://%s:%s serves %r (%.0f s)" % (shown, port, name, time.time() - t0), flush=True)"""
)

# exit 5 when another process listens on HOST:PORT (binding with SO_REUSEADDR, as vLLM's server does)
PORT_FREE_PY = """import errno, socket, sys
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


def guards() -> str:
    """The bash that refuses another vLLM version, a changed model (unless FORCE=1) and a port in use."""
    return f"""if ! installed="$("$VLLM_PYTHON" - <<'SLOTUNE_PY'
{VERSION_PY}
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
{PORT_FREE_PY}
SLOTUNE_PY
if [ "$port_check" = 5 ]; then
  echo "launch.sh: another process already listens on $HOST:$PORT; stop it, or set PORT to a free port" >&2
  exit 5
fi

"""


def machine_guard() -> str:
    """The bash that warns, in one line, where this machine differs from the one the capacity was measured on
    (launch.machine): the server still starts, as measured, but the stated rate was not measured here."""
    return f"""differs="$("$VLLM_PYTHON" - "$MEASURED_DEVICE" "$MEASURED_CPUS" <<'SLOTUNE_PY' || true
{MACHINE_CHECK_PY}
SLOTUNE_PY
)"
if [ -n "$differs" ]; then
  echo "launch.sh: WARNING: the capacity above was measured on $MEASURED_ON; $differs: that rate was not" \\
       "measured here; re-verify it on this machine: tune retune --study $(dirname "$0")" >&2
fi

"""
