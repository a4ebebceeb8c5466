"""``bench/search_vs_grid.py``'s grid: every point measured with the tuner's own trial, each row appended to
grid.jsonl as it lands (with its whole trial, so perfmodel can replay it), so a run cut short goes on from there."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from launch.config import ServeConfig
from tuner.trial.context import TrialContext
from tuner.trial.runner import run_trial


def measure_grid(
    args: argparse.Namespace,
    base: ServeConfig,
    ctx: TrialContext,
    points: list[dict],
    path: Path,
    t0: float,
    took: list[float],
) -> dict | None:
    """Every grid point not yet in PATH, each appended as it lands; None when the time budget stops it."""
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            done[json.dumps(row["point"], sort_keys=True)] = row
    for i, point in enumerate(points):
        key = json.dumps(point, sort_keys=True)
        if key in done:
            continue
        if args.time_budget and took and time.monotonic() - t0 + statistics.median(took) > args.time_budget:
            print(
                f"time budget of {args.time_budget:.0f} s nearly spent: {len(done)}/{len(points)} grid points "
                "measured; run again to continue",
                flush=True,
            )
            return None
        started = time.monotonic()
        res = run_trial(1000 + i, replace(base, **point), False, ctx, partial(_say, f"[grid {i}]"))
        took.append(time.monotonic() - started)
        row = {
            "point": point,
            "state": res.state,
            "goodput_req_s": res.goodput_req_s,
            "capacity_req_s": res.capacity_req_s,
            "slo_met": res.slo_met,
            "fail_reason": res.fail_reason,
            "result": res.to_dict(),  # every level, so perfmodel can replay the point (TrialResult.from_dict)
        }
        done[key] = row
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
    return done


def _say(prefix: str, message: str) -> None:
    print(f"{prefix} {message}", flush=True)
