"""Offline, dev machine, after run.sh: the first sitting's analysis (../cpu-predict-rank-smollm2-2026-12-05/
analyze.py) on this sitting's five configurations, the second sitting's (../cpu-predict-rank-smollm2-2026-12-05-b):
each predicted from this run's own defaults against its search estimate, per point and pooled (|error|, median,
Spearman's rank correlation); then the second sitting's predict-before.txt (the first sitting's defaults) beside them;
then each point left out of a calibration on the defaults and the four others.

    ../../.venv/bin/python analyze.py STUDY_DIR > analysis.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECOND = HERE.parent / "cpu-predict-rank-smollm2-2026-12-05-b"
sys.path.insert(0, str(SECOND))

from predict_before import POINTS, first_sitting  # noqa: E402


def main() -> None:
    first_sitting("analyze").analyze(Path(sys.argv[1]), POINTS, "the first sitting's defaults, this host type",
                  Path("/tmp/predict-rank-smollm2-c/analyze"), SECOND)  # fmt: skip


if __name__ == "__main__":
    main()
