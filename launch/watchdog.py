"""Watchdog: runs one vLLM server and guarantees it never outlives the process that started it.

Started by ``launch.server`` as ``python watchdog.py --grace S --pidfile F -- ARGV...`` in a new
session (it leads the process group that vLLM and all its EngineCore/worker children join), with
its stdin a pipe whose only write end the tuner holds. The kernel closes that write end however
the tuner ends — normal exit, exception, Ctrl-C, ``kill -9`` — so stdin reaching EOF means "the
tuner is gone": the watchdog then sends SIGTERM to its whole group, waits ``grace`` seconds and
sends SIGKILL to the group (itself included).

While the tuner lives it stops the server itself (SIGTERM, then SIGKILL to the group). The
watchdog ignores SIGINT and SIGTERM so it stays to the end, and exits with the server's exit code
(128+N for a server killed by signal N) once the server is gone, after killing any process its
server left behind in the group. Standard library only, run as a script: it must start in ~50 ms
and must not depend on how the tuner's package is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time


def _group_members(pgid: int) -> list[int]:
    """PIDs in process group ``pgid`` other than this one (Linux /proc)."""
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(name))
    return out


def _kill_others(pgid: int, sig: int) -> None:
    for pid in _group_members(pgid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _orphaned(child: subprocess.Popen[bytes], pgid: int, grace: float, on_orphan: list[str]) -> None:
    """The tuner is gone: run the cleanup command, terminate the group, then kill it (and us)."""
    print(f"[slotune-watchdog] parent gone; stopping server group {pgid}", file=sys.stderr, flush=True)
    if on_orphan:
        try:
            subprocess.run(on_orphan, stdin=subprocess.DEVNULL, timeout=max(grace, 30.0), check=False)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"[slotune-watchdog] cleanup {on_orphan!r} failed: {e!r}", file=sys.stderr, flush=True)
    try:
        os.killpg(pgid, signal.SIGTERM)  # this process ignores SIGTERM
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)  # takes this process down too


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--grace", type=float, default=10.0)
    ap.add_argument("--pidfile", default=None)
    ap.add_argument(
        "--on-orphan",
        default="[]",
        help="JSON argv run first when the parent is gone "
        "(e.g. removing a Docker container, which is not in this process group)",
    )
    ap.add_argument("--nice", type=int, default=0, help="run the command (and all it starts) at this niceness")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command to run")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pgid = os.getpgid(0)
    if args.nice > 0:
        lower_priority(args.nice)
    # restore default signal handling in the server (ignored dispositions are inherited by exec)
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=_default_signals)
    if args.pidfile:
        tmp = f"{args.pidfile}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{child.pid}\n")
        os.replace(tmp, args.pidfile)

    def watch_parent() -> None:
        try:
            while os.read(0, 4096):  # raw fd: no buffer lock held at exit; data is ignored
                pass
        except OSError:
            pass
        _orphaned(child, pgid, args.grace, json.loads(args.on_orphan))

    threading.Thread(target=watch_parent, daemon=True).start()
    rc = child.wait()
    _kill_others(pgid, signal.SIGKILL)  # EngineCore/workers the server left behind
    return rc if rc >= 0 else 128 - rc


def lower_priority(n: int) -> None:
    """Lower this process's priority by ``n`` (inherited by the server and its children) and, where the
    kernel groups CPU time by session (autogroup), this session's too: a load generator on the same
    cores then runs when it is ready instead of waiting behind vLLM's busy-polling processes."""
    os.nice(n)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(n))
        where = "process and session (autogroup)"
    except FileNotFoundError:  # a kernel without autogroup: the process niceness is what counts
        where = "process"
    except OSError as e:
        where = f"process only; session (autogroup) niceness not set: {e}"
    print(f"[slotune-watchdog] server niceness +{n} ({where})", file=sys.stderr, flush=True)


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter finalisation: the stdin thread may still be blocked in read()
