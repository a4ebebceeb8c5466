"""The KV cache side of the model against vLLM's own counters (issue #24; prints figures, not a test).

    python bench/perfmodel_cache_check.py [--calibrations results/perfmodel-validation/calibrations.json]

Each measured trial's levels are replayed on the model as they ran (its study's defaults' calibration, the
blocks vLLM read back) and, at the level the trial reported (its best, or closest), the model's prefix-cache
hit rate, preemptions and most sequences running are set beside what vLLM's /metrics said there. The cache
and preemption counts depend on the schedule far more than on the step times: they check the block pool,
the prefix cache and the scheduler, not the calibration.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_rows import describe, study_inputs  # noqa: E402
from perfmodel_studies import ROOT, STUDIES  # noqa: E402

from perfmodel.capacity import replay_levels  # noqa: E402
from perfmodel.costs import Costs  # noqa: E402


def check(folder: str, costs: Costs) -> list[str]:
    study = next(s for s in STUDIES if s.folder == folder)
    _, _, _, results, observed = study_inputs(study)
    out = [f"## {folder}: at the reported level, model / vLLM"]
    for r in results:
        server = r.server
        obs = observed[r.number]
        at = next((i for i, lv in enumerate(obs.levels) if lv.rate is not None and lv.rate == r.best_rate), None)
        if at is None or not server.to_dict():
            continue
        sim = replay_levels(obs, costs)[at]
        hit = sim.prefix_hit_rate
        measured_hit = server.prefix_cache_hit_rate
        hits = "off" if hit is None and measured_hit is None else f"{_pct(hit)} / {_pct(measured_hit)}"
        out.append(
            f"  trial {r.number} ({describe(r)}): prefix hits {hits}; preemptions {sim.preemptions} / "
            f"{_count(server.preemptions)}; running peak {sim.running_peak} / {_count(server.requests_running_peak)}"
        )
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def _count(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibrations", default=str(ROOT / "results" / "perfmodel-validation" / "calibrations.json"))
    ap.add_argument("--out", default=str(ROOT / "results" / "perfmodel-validation" / "cache-check.txt"))
    args = ap.parse_args()
    cals = json.loads(Path(args.calibrations).read_text())
    lines = [f"# python bench/perfmodel_cache_check.py {' '.join(sys.argv[1:])}".rstrip()]
    for study in STUDIES:
        more = check(study.folder, Costs.from_dict(cals[study.folder]["costs"]))
        lines += more
        print("\n".join(more), flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
