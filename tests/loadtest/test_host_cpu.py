"""How busy the host was during a run: every process's CPU time against the load generator's process tree."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.host_cpu import HostCpu, HostCpuMeter, host_busy_seconds, host_cores, tree_seconds

TCK = os.sysconf("SC_CLK_TCK")


def fake_proc(tmp_path: Path, procs: dict[int, tuple[int, int]]) -> Path:
    """A /proc with ``pid: (ppid, ticks)`` processes (ticks split over utime, stime, cutime, cstime) and 2 CPUs."""
    (tmp_path / "stat").write_text(
        "cpu  100 20 30 4000 50 6 7 8 0 0\ncpu0 50 10 15 2000 25 3 3 4 0 0\ncpu1 50 10 15 2000 25 3 4 4 0 0\nintr 1\n"
    )
    for pid, (ppid, ticks) in procs.items():
        (tmp_path / str(pid)).mkdir()
        quarter = ticks // 4
        fields = ["S", str(ppid)] + ["0"] * 9 + [str(quarter)] * 3 + [str(ticks - 3 * quarter)] + ["0"] * 30
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (a (tricky) name) " + " ".join(fields))
    (tmp_path / "self").mkdir()  # not a pid: skipped
    return tmp_path


def test_the_tree_counts_the_root_and_every_descendant_and_nothing_else(tmp_path):
    proc = fake_proc(tmp_path, {1: (0, 1000), 10: (1, 40), 11: (10, 80), 12: (11, 8), 20: (1, 400)})
    assert tree_seconds(10, proc) == pytest.approx((40 + 80 + 8) / TCK)
    assert tree_seconds(12, proc) == pytest.approx(8 / TCK)
    assert tree_seconds(99, proc) == 0.0  # gone: nothing of it left to count


def test_busy_time_is_all_but_idle_and_iowait_over_the_cpus_it_sums(tmp_path):
    proc = fake_proc(tmp_path, {})
    assert host_busy_seconds(proc) == pytest.approx((100 + 20 + 30 + 6 + 7 + 8) / TCK)
    assert host_cores(proc) == 2


def test_the_meter_divides_by_the_wall_time_and_others_are_busy_less_the_tree():
    readings = iter([(10.0, 100.0, 20.0), (14.0, 106.0, 22.0)])
    host = HostCpuMeter(read=lambda: next(readings), cores=2)
    host.start()
    used = host.stop()
    assert used == HostCpu(2, 4.0, 1.5, 0.5)
    assert used.others == pytest.approx(1.0) and used.notable
    assert "1.00 of the host's 2 cores" in used.phrase()
    assert HostCpu.from_dict(used.to_dict()) == used
    assert not HostCpu(2, 4.0, 0.6, 0.5).notable  # 0.1 core of 2: noise, not said
    assert HostCpu(2, 1.0, 0.4, 0.5).others == 0.0  # the two readings are not atomic: never below zero


def test_an_unreadable_host_is_not_measured_rather_than_zero():
    host = HostCpuMeter(read=lambda: None, cores=2)
    host.start()
    assert host.stop() is None


def running(proc_dir: Path) -> bool:
    try:
        return (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


SPIN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="Linux /proc only")
def test_a_child_counts_in_the_tree_and_an_orphaned_spinner_counts_as_other_work():
    """On this host's real /proc: a child's CPU time is the tree's; a process reparented away (a daemon, as
    another user's job would be) is other work."""
    child = HostCpuMeter()
    child.start()
    subprocess.run([sys.executable, "-c", SPIN.format(s=0.6)], check=True)
    mine = child.stop()
    assert mine is not None and mine.tree * mine.seconds >= 0.5  # the reaped child's 0.6 CPU-s

    daemon = (
        "import os, subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {SPIN.format(s=0.8)!r}], start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    other = HostCpuMeter()
    other.start()
    out = subprocess.run([sys.executable, "-c", daemon], check=True, capture_output=True, text=True)
    orphan = Path(f"/proc/{int(out.stdout)}")  # outlives its parent, reparented away from this tree
    end = time.monotonic() + 30
    while running(orphan) and time.monotonic() < end:
        time.sleep(0.05)
    used = other.stop()
    assert used is not None and used.others * used.seconds >= 0.6, used
    assert used.tree * used.seconds < 0.5, used  # the orphan's 0.8 CPU-s are not the tree's


def test_the_terminal_table_and_the_json_report_say_how_busy_the_host_was():
    from dataclasses import replace

    from loadtest.metrics import compute_metrics
    from loadtest.report import format_table

    report = replace(compute_metrics([]), host=HostCpu(cores=2, seconds=60.0, busy=1.8, tree=1.5))
    assert "1.80 of 2 cores busy" in format_table(report) and "other processes 0.30" in format_table(report)
    assert report.to_dict()["host_cpu"]["others"] == pytest.approx(0.3)
    assert compute_metrics([]).to_dict()["host_cpu"] is None and "host CPU" not in format_table(compute_metrics([]))
