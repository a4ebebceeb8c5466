"""Which configuration the challenger rule (tuner.certify.challenger) would have certified in committed studies, had
they run with ``--certify all``: read from each study.db (a scratch copy), nothing measured. Prints one line a study
(figures, not a test): its best's certified rate, and the challenger with its mean search estimate, or none.

    python bench/challenger_replay.py results/STUDY [results/STUDY ...]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def replay(study: Path, scratch: Path) -> str:
    """One study's line: its best at its certified rate, and the challenger the rule picks there, or none."""
    from tuner.certify.certified import stored
    from tuner.certify.challenger import challenge_rate, challenger
    from tuner.certify.summary import certified_summary, summarize
    from tuner.search.study import open_study, results_of

    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(study / "study.db", scratch / "study.db")
    opened = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    certs = stored(opened)
    summary = certified_summary(summarize(results_of(opened)), certs)
    name = (
        str(study.resolve().relative_to(ROOT / "results"))
        if study.resolve().is_relative_to(ROOT / "results")
        else str(study)
    )
    best = summary.best
    rate = certs[best.number].certified_rate if best is not None and best.number in certs else None
    if best is None or rate is None:
        return f"{name}: no certified best"
    rival = challenger(summary, certs)
    head = f"{name}: best trial {best.number} certified {rate:.3f} (bar {challenge_rate(rate):.3f})"
    if rival is None:
        return f"{head}; no challenger"
    return f"{head}; challenger trial {rival.number}, estimate {rival.capacity_req_s:.3f}: {rival.config.knobs()}"


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("give one or more committed study folders (results/<study>)")
    for arg in argv:
        print(replay(Path(arg), Path("/tmp/challenger-replay")), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
