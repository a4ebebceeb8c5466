"""How much one configuration's pace (launch.pace: one fixed request alone after the warm-up) varies between fresh
servers on one machine, and between timings on one server: what launch.sh's 1.5x tolerance must stay above. Starts
SERVERS fresh servers of vLLM's defaults for MODEL, one after another (niced as the study's servers on a CPU), and
times the pace TIMINGS times on each; prints one line per server and the spread.

    python bench/pace_spread.py MODEL [--servers 3] [--timings 3] [--nice 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from launch.config import ServeConfig
from launch.pace import PACE_TOLERANCE, pace_ms_per_token
from launch.server import start_server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--timings", type=int, default=3)
    ap.add_argument("--nice", type=int, default=10)
    args = ap.parse_args()
    config = ServeConfig(model=args.model, served_model_name="m")
    firsts: list[float] = []
    with tempfile.TemporaryDirectory() as logs:
        for i in range(args.servers):
            with start_server(config, python=sys.executable, log_dir=Path(logs), nice=args.nice) as server:
                start = pace_ms_per_token(server.url, "m")  # as a trial times it, right after the warm-up
                again = [pace_ms_per_token(server.url, "m") for _ in range(args.timings)]
            paces = [p for p in [start, *again] if p is not None]
            listed = ", ".join(f"{p:.2f}" for p in paces)
            print(f"server {i + 1}: startup {server.startup_s:.0f} s; pace ms a token (start, then again): {listed}")
            if start is not None:
                firsts.append(start)
    if firsts:
        worst = max(firsts) / min(firsts)
        print(
            f"the start's pace over {len(firsts)} servers: median {statistics.median(firsts):.2f} ms, "
            f"max/min {worst:.2f} (launch.sh warns above {PACE_TOLERANCE})"
        )


if __name__ == "__main__":
    main()
