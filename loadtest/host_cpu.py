"""CPU time on the host over one load run, split into the load generator's process tree (this process and
its descendants: a server that tune started is one of them) and every other process.

Why: on a host whose cores the server shares (vLLM-CPU), other work during a level slows the server, and a
rate measured then is lower than a quiet host holds. A figure is only as good as the host it was measured
on, so the report says how busy that host was. Linux only (``/proc``); elsewhere nothing is measured.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

OTHERS_NOTABLE = 0.1  # share of the host's cores other processes used that a report line mentions

CpuReading = tuple[float, float, float]  # (wall clock s, CPU s of every process, CPU s of this tree)


@dataclass(frozen=True)
class HostCpu:
    """CPU used over one run, in cores (CPU-seconds per wall-clock second)."""

    cores: int  # logical CPUs online
    seconds: float
    busy: float  # every process on the host
    tree: float  # the load generator's process and its descendants

    @property
    def others(self) -> float:
        """Cores that processes outside the tree used (never below 0: the two readings are not atomic)."""
        return max(0.0, self.busy - self.tree)

    @property
    def notable(self) -> bool:
        return self.others >= OTHERS_NOTABLE * self.cores

    def phrase(self) -> str:
        return f"other processes used {self.others:.2f} of the host's {self.cores} cores"

    def to_dict(self) -> dict[str, float]:
        return {
            "cores": self.cores,
            "seconds": self.seconds,
            "busy": self.busy,
            "tree": self.tree,
            "others": self.others,
        }

    @classmethod
    def from_dict(cls, d: dict[str, float]) -> HostCpu:
        return cls(int(d["cores"]), float(d["seconds"]), float(d["busy"]), float(d["tree"]))


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


def host_busy_seconds(proc: Path = Path("/proc")) -> float:
    """CPU seconds every process has used since boot (``/proc/stat``: all but idle and iowait; guest time is
    already inside user and nice)."""
    fields = (proc / "stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _ticks()


def host_cores(proc: Path = Path("/proc")) -> int:
    """The CPUs ``/proc/stat`` sums over (its ``cpuN`` lines): the denominator of its busy time."""
    try:
        lines = (proc / "stat").read_text().splitlines()
    except OSError:
        return os.cpu_count() or 1
    return sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit()) or os.cpu_count() or 1


def _stat_fields(proc: Path, pid: str) -> list[str] | None:
    try:
        stat = (proc / pid / "stat").read_text()
    except OSError:  # ended since the listing
        return None
    return stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "


def tree_seconds(root: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds of ``root`` and its live descendants, each with its reaped children's (so a child that
    ended during the run still counts once its parent has waited for it)."""
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit() or (f := _stat_fields(proc, entry.name)) is None:
            continue
        pid = int(entry.name)
        parent[pid] = int(f[1])
        used[pid] = sum(int(x) for x in f[11:15])  # utime, stime, cutime, cstime
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total / _ticks()


def read_host(*roots: int) -> CpuReading | None:
    """One reading whose tree is ``roots``' trees together (default: this process's), or None where ``/proc`` has
    no such files."""
    try:
        return time.monotonic(), host_busy_seconds(), sum(tree_seconds(r) for r in roots or (os.getpid(),))
    except (OSError, ValueError):
        return None


class HostCpuMeter:
    """``start()`` before a run, ``stop()`` after: the HostCpu in between (None when not measurable)."""

    def __init__(self, read: Callable[[], CpuReading | None] = read_host, cores: int | None = None) -> None:
        self.read, self.cores = read, cores or host_cores()
        self._first: CpuReading | None = None

    def start(self) -> None:
        self._first = self.read()

    def stop(self) -> HostCpu | None:
        last = self.read()
        if self._first is None or last is None or last[0] <= self._first[0]:
            return None
        (t0, busy0, tree0), (t1, busy1, tree1) = self._first, last
        dt = t1 - t0
        return HostCpu(self.cores, dt, (busy1 - busy0) / dt, (tree1 - tree0) / dt)
