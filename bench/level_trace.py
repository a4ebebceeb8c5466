"""What one steady level looks like from inside: requests in flight and their time in the system per second,
vLLM's peaks, and the steady-state verdict, for levels exactly as `tune` runs them (prints figures; not a test).

    PYTHONPATH=. python bench/level_trace.py --model DIR [--gpu cpu] [--rates 7.4,20,30,40] [--rounds 2]

One server (vLLM's defaults for the profile, niced as tune's trials on the CPU) is started once; then, per
round, one level at each rate with the plan's steady-state length (``tuner.trial.context.load_spec``, a fresh
seed per level). Per level: the verdict and its reason, p95 TTFT/TPOT, the load generator's lag, and one
``in-flight/mean-E2E`` pair per second of the send window.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launch.server import start_server  # noqa: E402
from loadtest.report import LoadReport  # noqa: E402
from loadtest.runner import run_load  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.settings.tune_settings import resolve  # noqa: E402
from tuner.trial.context import load_spec  # noqa: E402
from tuner.trial.measuring import rate_level  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402


def per_second(rep: LoadReport) -> str:
    recs = sorted((r for r in rep.records if not r.warmup), key=lambda r: r.scheduled_at)
    t0 = recs[0].scheduled_at
    cells = []
    for b in range(int((recs[-1].scheduled_at - t0) // 1.0) + 1):
        t = t0 + b + 0.5
        flight = sum(1 for r in recs if r.scheduled_at <= t and (r.done_at or math.inf) > t)
        e2e = [r.done_at - r.scheduled_at for r in recs if t0 + b <= r.scheduled_at < t0 + b + 1 and r.done_at]
        cells.append(f"{flight}/{statistics.mean(e2e) if e2e else 0:.2f}")
    return " ".join(cells)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpu", default="cpu")
    ap.add_argument("--slo", default="ttft_p95=2s")
    ap.add_argument("--workload", default="chat")
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--rates", default="7.4,20,30,40")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="level-trace-"))
    settings = resolve(
        {},
        {
            "model": args.model,
            "gpu": args.gpu,
            "slo": args.slo,
            "workload": args.workload,
            "out": str(out),
            "output_tokens": args.output_tokens,
            "vllm_python": sys.executable,
        },
    )
    inp = load_inputs(settings)
    ctx, config = trial_context(inp, out / "logs"), base_config(inp)
    plan = ctx.plan
    with start_server(
        config,
        python=ctx.python,
        log_dir=ctx.log_dir,
        startup_timeout_s=ctx.startup_timeout_s,
        warmup_requests=2,
        nice=ctx.server_nice,
        on_progress=lambda m: None,
    ) as server:
        k = 0
        for _ in range(args.rounds):
            for rate in (float(x) for x in args.rates.split(",")):
                k += 1
                level = rate_level(plan, rate, plan.level_requests(rate), may_abandon=False)  # the search's level
                rep = run_load(load_spec(ctx, server.url, config, 2000 + k, **level))
                peaks = {a: b for a, b in rep.server.items() if "wait" in a or "run" in a}
                print(
                    f"rate {rate}: {'HOLD' if rep.holds else 'MISS'} ttft p95 {rep.ttft_ms.p95:.0f} tpot p95 "
                    f"{rep.tpot_ms.p95:.1f} lag p95 {rep.schedule_lag_ms.p95:.0f} tput {rep.throughput_req_s:.2f} "
                    f"server {peaks}\n  {rep.steady.summary() if rep.steady else None}\n  {per_second(rep)}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
