"""What the model's work costs in one process and over every core, on a committed `tune --predict` study: the
first calibration on vLLM's defaults, then a ranking of a sample of the search space, each timed with
``workers=1`` and with ``workers=None`` (every usable core), and checked to give the same answer.

    python bench/perfmodel_parallel.py [--study results/h200-llama-3-8b-a30-predict-2026-12-02-b] [--sample 60]

Prints one line per step (seconds, cores, the answer's fingerprint). The study's inputs are rebuilt as its
offline_check.py does (vLLM's recorded --help, the config-only model)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_study import study_inputs  # noqa: E402

from perfmodel.pool import usable_cores  # noqa: E402
from perfmodel.rank import calibrate, rank  # noqa: E402
from tuner.search.predict_model import FIRST_EVALUATIONS, candidate, observed_levels, sample_space  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context, trial_context  # noqa: E402


def study_contexts(study: Path):  # noqa: ANN201 (a TrialContext and a SpaceContext)
    inp = study_inputs(study, "/tmp/perfmodel-parallel")
    return trial_context(inp, Path("/tmp/perfmodel-parallel/logs")), space_context(inp, base_config(inp), None)


def timed(label: str, workers: int | None, fn):  # noqa: ANN001, ANN201
    t0 = time.monotonic()
    out = fn(workers)
    cores = usable_cores() if workers is None else workers
    print(f"{label}: {time.monotonic() - t0:6.1f} s over {cores} process(es)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-02-b")
    ap.add_argument("--sample", type=int, default=60)
    args = ap.parse_args()
    from tuner.search.predict_demand import demand_of

    ctx, sctx = study_contexts(args.study)
    demand = demand_of(ctx)
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{args.study / 'study.db'}", resume=True, seed=0))}
    observed = observed_levels(results[0], demand, ctx.plan)
    print(f"{args.study.name}: trial 0's {len(observed)} levels; {usable_cores()} usable cores", flush=True)

    def fit(workers: int | None):  # noqa: ANN202
        return calibrate(observed, ctx.spec, ctx.gpu, max_evaluations=FIRST_EVALUATIONS, workers=workers)

    cals = [timed("calibration", w, fit) for w in (1, None)]
    print(f"  the same costs: {cals[0].costs == cals[1].costs}; {cals[0].costs}")
    found = [candidate(c, ctx) for c in sample_space(sctx, args.sample, seed=0)]
    cands = [c for c in found if c is not None]

    def ranking(workers: int | None):  # noqa: ANN202
        return rank(cands, cals[0], demand, workers=workers, extrapolate_kv=True)

    ranks = [timed(f"ranking of {len(cands)} configurations", w, ranking) for w in (1, None)]
    print(f"  the same ranking: {ranks[0] == ranks[1]}; top {ranks[0][0].capacity_req_s} req/s")


if __name__ == "__main__":
    main()
