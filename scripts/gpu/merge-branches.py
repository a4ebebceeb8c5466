"""Merge two copies of one study that diverged from a shared first trial into one study (a one-off repair).

    python scripts/gpu/merge-branches.py OUT A_DIR B_DIR SHARED

Used once, for results/h200-llama-3-8b-a30 (2026-11-29): two resumed H200 calls each started from the
same one-trial study (the first call's study.db was not carried into the second), so each ran its own
trials 1..n. Every trial here was measured; the merge only puts them in one study: the shared prefix
(trials < SHARED, from A), then A's own trials, then B's, renumbered in that order. Each trial keeps its
stored result (only ``number`` follows the new order) and records ``branch`` and ``branch_trial``.
B's sampler did not see A's trials. Outputs are rebuilt from the merged study; launch.sh is A's or B's,
whichever holds the best trial (it is checked to be that trial's configuration).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuner.report.outputs import write_outputs  # noqa: E402
from tuner.report.report_html import write_report  # noqa: E402
from tuner.search.study import STUDY_NAME, open_study, results_of  # noqa: E402
from tuner.study_outputs import importances  # noqa: E402

META_KEYS = ("created", "settings", "slo", "workload", "gpu", "model", "vllm", "versions", "notes")


def load(d: Path) -> optuna.Study:
    return optuna.load_study(study_name=STUDY_NAME, storage=f"sqlite:///{d.resolve()}/study.db")


def main() -> int:
    out, a_dir, b_dir, shared = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    a, b = load(a_dir).trials, load(b_dir).trials
    for x, y in zip(a[:shared], b[:shared], strict=True):  # the shared prefix must really be the same
        assert x.user_attrs["result"] == y.user_attrs["result"], f"trial {x.number} differs between branches"
    order = [("shared", t) for t in a[:shared]] + [("A", t) for t in a[shared:]] + [("B", t) for t in b[shared:]]
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.db").unlink(missing_ok=True)
    study = open_study(f"sqlite:///{out.resolve()}/study.db", resume=False, seed=0)
    for number, (branch, t) in enumerate(order):
        t = optuna.trial.FrozenTrial(
            number=number,
            state=t.state,
            value=t.value,
            values=None,
            datetime_start=t.datetime_start,
            datetime_complete=t.datetime_complete,
            params=t.params,
            distributions=t.distributions,
            user_attrs={
                **t.user_attrs,
                "result": {**t.user_attrs["result"], "number": number},
                "branch": branch,
                "branch_trial": t.number,
            },
            system_attrs=t.system_attrs,
            intermediate_values=t.intermediate_values,
            trial_id=0,
        )
        study.add_trial(t)
    meta = {k: v for k, v in json.loads((b_dir / "best.json").read_text()).items() if k in META_KEYS}
    meta["notes"] = [
        *meta["notes"],
        f"Merged from two branches of one study: trials 0..{shared - 1} shared, "
        f"then {len(a) - shared} from branch A, then {len(b) - shared} from branch B (B's sampler did "
        "not see A's trials); see results/README.md.",
    ]

    def script(path: Path, best: object) -> None:
        source = {"shared": a_dir, "A": a_dir, "B": b_dir}[order[best.number][0]]
        src_best = json.loads((source / "best.json").read_text())["best"]
        assert src_best["config"] == best.config.to_dict(), "that branch's launch.sh is for another config"
        shutil.copy(source / "launch.sh", path)

    def report(path: Path, results: list, summary: object, m: dict) -> None:
        write_report(path, results, summary, m, importances(study))

    summary = write_outputs(out, results_of(study), meta, script, report)
    print(f"{len(order)} trials; best trial {summary.best.number if summary.best else None}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
