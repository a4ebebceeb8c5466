"""How much one load level's p95 varies with the number of requests in it (prints figures; not a test).

    PYTHONPATH=. python bench/level_noise.py --model DIR [--gpu cpu] [--rate 2.3] [--sizes 18,64] [--rounds 6]

One server (vLLM's defaults for the profile) is started once; then, ``--rounds`` times, one Poisson level
of each size in ``--sizes`` requests is run at ``--rate`` req/s (order alternating, a fresh arrival seed
every level), exactly as the capacity search runs a level (but never abandoned early). Printed per size:
p95 TTFT and TPOT of every level, their spread, and in how many levels every SLO held. A level that
decides "met / missed" by one or two requests cannot rank configurations; the spread shows whether the
measurement or the server is the noisy part.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launch.config import ServeConfig  # noqa: E402
from loadtest.runner import run_load  # noqa: E402
from loadtest.spec import LoadSpec  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.settings.tune_settings import resolve  # noqa: E402
from tuner.trial.context import TrialContext  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402


def spread(values: list[float]) -> str:
    if not values:
        return "no values"
    return (
        f"median {statistics.median(values):.0f} ms, range {min(values):.0f}–{max(values):.0f} ms, "
        f"max/min {max(values) / max(min(values), 1e-9):.1f}"
    )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpu", default="cpu")
    ap.add_argument("--slo", default="ttft_p95=2s")
    ap.add_argument("--workload", default="chat")
    ap.add_argument("--rate", type=float, default=2.3)
    ap.add_argument("--sizes", default="18,64", help="requests per level, comma-separated")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--vllm-python", default=sys.executable)
    return ap


def levels_on_one_server(
    args: argparse.Namespace, sizes: list[int], ctx: TrialContext, config: ServeConfig
) -> dict[int, list[tuple[float | None, float | None, bool]]]:
    """ROUNDS levels of each size, the sizes' order alternating, on one server: each level's p95s and SLO."""
    from launch.server import start_server

    got: dict[int, list[tuple[float | None, float | None, bool]]] = {n: [] for n in sizes}
    with start_server(
        config,
        python=ctx.python,
        log_dir=ctx.log_dir,
        startup_timeout_s=ctx.startup_timeout_s,
        warmup_requests=ctx.plan.warmup_requests,
        base_env=None,
        nice=ctx.server_nice,
        on_progress=lambda m: print(m, flush=True),
    ) as server:
        k = 0
        for r in range(args.rounds):
            for n in sizes if r % 2 == 0 else list(reversed(sizes)):
                k += 1
                rep = run_load(
                    LoadSpec(
                        url=server.url,
                        model=config.name,
                        workload=ctx.workload,
                        rate=args.rate,
                        requests=n,
                        slos=ctx.slos,
                        tokenizer=ctx.tokenizer,
                        output_tokens=ctx.output_tokens,
                        seed=1000 + k,
                    )
                )
                ttft, tpot = rep.value("ttft", 95), rep.value("tpot", 95)
                got[n].append((ttft, tpot, bool(rep.slo_met)))
                print(
                    f"round {r} level of {n} requests at {args.rate}/s: p95 TTFT {ttft or 0:.0f} ms, "
                    f"p95 TPOT {tpot or 0:.0f} ms, SLO {'met' if rep.slo_met else 'missed'}",
                    flush=True,
                )
    return got


def main() -> int:
    args = build_parser().parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    out = Path(tempfile.mkdtemp(prefix="level-noise-"))
    settings = resolve(
        {},
        {
            "model": args.model,
            "gpu": args.gpu,
            "slo": args.slo,
            "workload": args.workload,
            "out": str(out),
            "vllm_python": args.vllm_python,
        },
    )
    inp = load_inputs(settings)
    ctx = trial_context(inp, out / "logs")
    config = base_config(inp)
    got = levels_on_one_server(args, sizes, ctx, config)
    print(
        f"workload {inp.workload.name}, SLO {settings.slo}, GPU profile {inp.gpu.name}, vLLM {inp.vllm.version}, "
        f"rate {args.rate} req/s, {args.rounds} levels per size on one server"
    )
    for n, rows in got.items():
        ttfts = [t for t, _, _ in rows if t is not None]
        tpots = [t for _, t, _ in rows if t is not None]
        met = sum(1 for *_, m in rows if m)
        print(
            f"{n:4d} requests/level: p95 TTFT {spread(ttfts)}; p95 TPOT {spread(tpots)}; SLO met in {met}/{len(rows)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
