"""The deploy exports' start-up check of the machine, launch.sh's two checks (docs/certification.md): a certified
rate belongs to the machine that measured it.

Where the study recorded its device (``launch.machine.MeasuredOn``), the container's command becomes a short Python
wrapper (``python3 -c WRAPPER DEVICE CPUS STUDY [PACE TOLERANCE PORT NAME]``, then the server's args): a forked
child compares this machine with the one measured (``launch.machine.device_name`` and ``mismatch``, the source
launch.sh embeds; torch is imported only in that child, so the server finds its GPU untouched) and prints one WARNING
line to the container's log; then the wrapper execs the unchanged server argv (the server keeps the container's PID
and its signals). Where the study recorded a pace, a child of the server waits for /health, warms up and times it
(``launch.pace.PACE_SOURCE``), warning where it is more than the device's tolerance times slower.
Nothing refuses or delays the server beyond the device check (seconds). Where no device was recorded, the command
is ``python3`` alone, as before.
"""

from __future__ import annotations

import inspect

from launch.machine import MeasuredOn, device_name, mismatch
from launch.pace import PACE_SOURCE

CHECK_TIMEOUT_S = 120  # the device check (a torch import) may take this long before the server starts anyway
INIT_CONTAINER = "machine-check"  # Helm: the production-stack chart runs `vllm serve` itself, so the check runs before

_HEAD = f"""# slotune: warn where this machine is not the one the capacity was measured on (launch.machine), then exec
# the server argv that follows; argv: measured device, its CPU count, the study@PACE@, then the server argv
from __future__ import annotations
import os, sys, time
{inspect.getsource(device_name)}
{inspect.getsource(mismatch)}
def warn(what: str) -> None:  # one line in the container's log, as launch.sh's
    print("slotune: WARNING: %s; re-verify it on this machine: tune retune --study %s" % (what, study),
          file=sys.stderr, flush=True)
"""

_CHECK = f"""
def check() -> None:  # torch only in a child, which exits: the server's process never touches the GPU
    child = os.fork()
    if child == 0:
        try:
            differs = mismatch(measured, cpus, device_name(), os.cpu_count())
            if differs:
                warn("the capacity in this deployment's header was measured on %s; %s: that rate was not "
                     "measured here" % (measured, differs))
        finally:
            os._exit(0)
    deadline = time.time() + {CHECK_TIMEOUT_S}
    while os.waitpid(child, os.WNOHANG) == (0, 0):
        if time.time() > deadline:  # a hung check must not hold the server back
            os.kill(child, 9)
            os.waitpid(child, 0)
            return
        time.sleep(0.05)
"""

_PACE = f"""
{PACE_SOURCE}
def watch() -> None:  # waits for /health, warms up as launch.sh does, then times the pace (launch.pace)
    import json, urllib.request
    base = "http://127.0.0.1:%s" % port
    t0 = time.time()
    while time.time() - t0 < 3600:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        time.sleep(2)
    else:
        return
    body = json.dumps({{"model": name, "prompt": "Warm up the server.", "max_tokens": 8, "temperature": 0}})
    for _ in range(2):
        req = urllib.request.Request(base + "/v1/completions", data=body.encode(),
                                     headers={{"Content-Type": "application/json"}})
        try:
            urllib.request.urlopen(req, timeout=600).read()
        except Exception:
            pass
    here = pace_ms_per_token(base, name)
    differs = slower(float(pace), here, float(tolerance))
    if differs:
        warn("%s: the capacity in this deployment's header was not measured at this pace" % differs)
    elif here is None:  # not timed: said, so that silence means the pace matched
        warn(untimed(float(pace)))
    else:  # the figures an operator compares, as launch.sh prints them
        print("slotune: " + within(float(pace), here, float(tolerance)), file=sys.stderr, flush=True)
def beside() -> None:  # the watcher: a child of the server's process once this one execs it
    if os.fork() == 0:
        try:
            watch()
        finally:
            os._exit(0)
"""

_RUN = """
try:
    for step in steps:
        step()
except Exception:  # a check that cannot run must not stop the server
    pass
if server:  # none: the check alone (Helm's init container)
    os.execv(sys.executable, [sys.executable, *server])
"""


def wrapper_script(pace: bool) -> str:
    """The wrapper's Python source; with ``pace`` it also times the pace once the server answers."""
    if pace:
        argv = "(measured, cpus, study, pace, tolerance, port, name), server = sys.argv[1:8], sys.argv[8:]\n"
        head = _HEAD.replace("@PACE@", ", its pace (ms a token), the slowdown that warns, port, served name")
        return head + argv + _CHECK + _PACE + "steps = [check, beside]\n" + _RUN
    argv = "(measured, cpus, study), server = sys.argv[1:4], sys.argv[4:]\n"
    return _HEAD.replace("@PACE@", "") + argv + _CHECK + "steps = [check]\n" + _RUN


def entrypoint(measured: MeasuredOn | None, study: str, *, port: int, name: str, pace: bool = True) -> list[str]:
    """The container's command before the server's args (``-m vllm.entrypoints.openai.api_server ...``):
    ``python3`` alone where the study recorded no device (as before), else the wrapper and what it compares."""
    if measured is None:
        return ["python3"]
    head = ["python3", "-c"]
    cpus = str(measured.cpus or "")
    if pace and measured.pace_ms is not None:
        timed = [f"{measured.pace_ms:.3f}", f"{measured.pace_tolerance:g}", str(port), name]
        return [*head, wrapper_script(True), measured.device, cpus, study, *timed]
    return [*head, wrapper_script(False), measured.device, cpus, study]


def header_lines(measured: MeasuredOn | None, *, init_container: bool = False) -> list[str]:
    """'measured on: ...' as launch.sh states it, and what the export checks at start ([] where nothing was
    recorded). ``init_container``: Helm's, where the check runs before the chart's server and no pace is timed."""
    if measured is None:
        return []
    cpu = " (on a CPU, its CPU count)" if measured.device.startswith("cpu: ") else ""
    if init_container:
        lines = [f"measured on: {measured.with_pace(None).text()}"]
        if measured.pace_ms is not None:
            lines.append(
                f"pace there: a fixed request alone at {measured.pace_ms:.1f} ms a token (not timed here: the "
                "chart starts the server itself)"
            )
        log = f"kubectl logs POD -c {INIT_CONTAINER}"
        where = f"the init container {INIT_CONTAINER} warns in one line of its log ({log})"
        return [*lines, f"at start, {where} where its device differs from that{cpu}; it never stops the start"]
    paced = (
        f", and, once /health answers, where that request is more than {measured.pace_tolerance:g}x slower"
        if measured.pace_ms is not None
        else ""
    )
    return [
        f"measured on: {measured.text()}",
        f"at start, the container warns in one line of its log where its device differs from that{cpu}{paced}; "
        "the server starts either way",
    ]
