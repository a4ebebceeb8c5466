"""Offline, on the dev machine (nothing measured): run g's search at the moment its fp8 family was calibrated
(trial 2), replayed from study.db's stored calibrations with this tree's code: the fp8 family's sampled
configurations ranked and refined as `tune --predict` does, then what the queue gains from that step and what
the stop rule says of it (the best measured 74.308 req/s, the demonstrated error 1.8 %).

    ../../.venv/bin/python replay_family_add.py > replay-family-add.txt
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.family import family_of  # noqa: E402
from tuner.report.predict_report import measured_rate  # noqa: E402
from tuner.search.predict_fit import calibrated  # noqa: E402
from tuner.search.predict_model import sample_space  # noqa: E402
from tuner.search.predict_queue import converged  # noqa: E402
from tuner.search.predict_search import _knobs, _Search  # noqa: E402
from tuner.search.refine import refined  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context  # noqa: E402


def main() -> None:
    scratch = Path("/tmp/replay-g")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(HERE / "study.db", scratch / "study.db")  # the committed file stays as the run left it
    inp, _ctx, model = study_model(HERE, scratch / "out")
    sctx = space_context(inp, base_config(inp), None)
    study = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    results = sorted(results_of(study), key=lambda r: r.number)
    cals, fitted = calibrated(study, model, results[0])
    print(f"stored calibrations: {[(str(c.family), list(c.trials)) for c in (cals.main, *cals.others)]}")
    print(f"demonstrated error {cals.demonstrated_error:.4f}")
    configs = sample_space(sctx, inp.settings.predict_sample, inp.settings.seed)

    def widen(rank, ranked, known):
        return refined(rank, ranked, known, sctx, print)

    state = _Search(model, cals, fitted, configs, widen, print)
    state._add_family(family_of(results[2].config), {r.config for r in results})
    best = max(x for r in results if (x := measured_rate(r)) is not None)
    print(f"best measured {best:.3f} req/s; the queue's top after the family's step:")
    for p in state.queue.predicted[:5]:
        print(f"  {p.capacity_req_s:.3f} req/s, {family_of(p.config)}: {_knobs(p)}")
    stop = converged(best, state.queue.predicted, cals.demonstrated_error)
    print(f"stop rule: {stop or 'launch the top: it is predicted above the best measured by more than the error'}")


if __name__ == "__main__":
    main()
