"""The spare speed (tuner.certify.spare_speed) of committed studies' stated rates, replayed offline from each
study.db as tune states it: its calibration as ``tune --predict`` stored it, else fitted on the winner's family's
launches (tuner.search.predict_spare.calibration_trials), its winner with the KV blocks its server had, its soaks'
window, below the lowest miss above that rate among its soaks and its trial's levels. Prints one line each (figures,
not a test; nothing is measured), to set beside what `vllm bench serve` found at those rates on other machines.

    python bench/spare_speed_replay.py results/STUDY [results/STUDY ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))


def replay(study: Path, scratch: Path) -> str:
    """One study's line: its winner's spare speed at the rate it states, or why there is none."""
    from offline_model import scratch_study_context

    from tuner.certify.certified import stored
    from tuner.search.predict_spare import spare_speed_of
    from tuner.search.study import open_study

    headline = json.loads((study / "best.json").read_text()).get("headline") or {}
    trial = headline.get("best_trial")
    _inp, ctx, model, results = scratch_study_context(study, scratch)
    opened = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    cert = stored(opened).get(trial) if trial is not None else None
    if cert is None or cert.certified_rate is None:
        return f"{_name(study)}: no certified winner"
    found = spare_speed_of(
        opened, ctx, results[trial], cert, results[trial].levels, lambda trials: model.calibrate(trials, None)
    )
    if isinstance(found, str):
        return f"{_name(study)}: {found}"
    steps = "; ".join(f"x{s.factor:.2f} {s.held}/{s.draws} held, {s.preemptions_max:,} preempted" for s in found.slowed)
    spare = "none" if found.spare is None else f"{100 * (found.spare - 1):.0f} %"
    return f"{_name(study)}: spare speed {spare} ({steps})\n  {found.line()}"


def _name(study: Path) -> str:
    """A study folder's name, its parent's too where it is a results folder's ``study`` subfolder."""
    return f"{study.parent.name}/{study.name}" if study.name == "study" else study.name


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("give one or more committed study folders (results/<study>)")
    for arg in argv:
        t0 = time.perf_counter()
        try:
            line = replay(Path(arg), Path("/tmp/spare-speed-replay"))
        except Exception as exc:  # a study this machine cannot rebuild (its model directory absent): say so, go on
            line = f"{_name(Path(arg))}: not replayed ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
        print(f"{line} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
