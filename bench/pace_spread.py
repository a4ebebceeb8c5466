"""How much one configuration's pace (launch.pace: one fixed request alone after the warm-up) varies between fresh
servers on one machine, and between timings on one server: what launch.sh's tolerance must stay above. Starts
SERVERS fresh servers of one configuration (vLLM's defaults for MODEL, or a study's winner with --best), one after
another (niced as the study's servers on a CPU), and times the pace TIMINGS times on each; prints one line per server
and the spread, and with --json writes every timing.

    python bench/pace_spread.py MODEL [--servers 3] [--timings 3] [--nice 10]
    python bench/pace_spread.py --best STUDY/best.json --nice 0 --deadline-s 480 --json paces.json   # a GPU study
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from launch.config import ServeConfig
from launch.machine import device_name
from launch.pace import pace_ms_per_token, pace_tolerance
from launch.server import start_server


@dataclass(frozen=True)
class ServerPaces:
    server: int
    startup_s: float
    start: float | None  # the pace right after the warm-up, as a trial times it
    again: list[float | None]


def served_config(args: argparse.Namespace) -> ServeConfig:
    """The configuration timed: a study's winner as launch.sh serves it (its KV pinned; else as its trials launched
    it), else vLLM's defaults for MODEL."""
    if args.best:
        best = json.loads(Path(args.best).read_text())["best"]
        return ServeConfig.from_dict(best.get("deployed") or best["launched"] or best["config"])
    if not args.model:
        sys.exit("pace_spread: give MODEL or --best STUDY/best.json")
    return ServeConfig(model=args.model, served_model_name="m")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--best", help="a study's best.json: time its winner's launched configuration")
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--timings", type=int, default=3)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--deadline-s", type=float, help="start no server that would not be up before this many seconds")
    ap.add_argument("--json", help="write every server's startup and timings here")
    args = ap.parse_args()
    config = served_config(args)
    name = config.served_model_name or config.model
    t0, rows = time.monotonic(), list[ServerPaces]()
    with tempfile.TemporaryDirectory() as logs:
        for i in range(args.servers):
            last = rows[-1].startup_s if rows else 0.0
            if args.deadline_s and rows and time.monotonic() - t0 + last + 30 > args.deadline_s:
                print(f"stopping after {len(rows)} servers: another would pass --deadline-s {args.deadline_s:.0f}")
                break
            with start_server(config, python=sys.executable, log_dir=Path(logs), nice=args.nice) as server:
                start = pace_ms_per_token(server.url, name)  # as a trial times it, right after the warm-up
                again = [pace_ms_per_token(server.url, name) for _ in range(args.timings)]
            rows.append(ServerPaces(i + 1, round(server.startup_s, 1), start, again))
            listed = ", ".join(f"{p:.2f}" for p in [start, *again] if p is not None)
            print(f"server {i + 1}: startup {server.startup_s:.0f} s; pace ms a token (start, then again): {listed}")
            sys.stdout.flush()
    device = device_name() or ""
    report(rows, pace_tolerance(device))
    if args.json:
        servers = [asdict(r) for r in rows]
        out = {"device": device, "config": config.to_dict(), "servers": servers, "tolerance": pace_tolerance(device)}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def report(rows: list[ServerPaces], tolerance: float) -> None:
    firsts = [r.start for r in rows if r.start is not None]
    every = firsts + [p for r in rows for p in r.again if p is not None]
    if firsts:
        print(
            f"the start's pace over {len(firsts)} servers: median {statistics.median(firsts):.2f} ms, "
            f"max/min {max(firsts) / min(firsts):.3f}; every timing max/min {max(every) / min(every):.3f} "
            f"(launch.sh warns above {tolerance:g}x on this device)"
        )


if __name__ == "__main__":
    main()
