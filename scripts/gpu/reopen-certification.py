"""Reopen a study's stored certification of one trial, so that a resumed tune goes on from its soaks under today's
rules (a rule added since, such as the soaks below a KV-bound edge, then runs only the soaks it adds).

    python scripts/gpu/reopen-certification.py STUDY_DIR TRIAL

The certification's soaks move to the study's cut certifications (tuner.certify.certified.PARTIAL_ATTR) with their
soak length; the certification itself is dropped. Nothing is measured; the other trials' certifications stay.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tuner.certify.certified import PARTIAL_ATTR, STUDY_ATTR, stored  # noqa: E402
from tuner.search.study import open_study  # noqa: E402


def reopen(study_dir: Path, trial: int) -> str:
    study = open_study(f"sqlite:///{study_dir.resolve() / 'study.db'}", resume=True, seed=0, must_exist=True)
    certs = stored(study)
    cert = certs.pop(trial, None)
    if cert is None:
        print(f"reopen-certification: error: {study_dir} has no stored certification of trial {trial}", file=sys.stderr)
        raise SystemExit(2)
    cut = dict(study.user_attrs.get(PARTIAL_ATTR, {}))
    cut[str(trial)] = {"soak_s": cert.soak_s, "soaks": [s.to_dict() for s in cert.soaks]}
    study.set_user_attr(PARTIAL_ATTR, cut)
    study.set_user_attr(STUDY_ATTR, [c.to_dict() for c in certs.values()])
    return f"trial {trial}: {len(cert.soaks)} soaks of {cert.soak_s:g} s reopened (it had stated {cert.certified_rate})"


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        print("usage: python scripts/gpu/reopen-certification.py STUDY_DIR TRIAL", file=sys.stderr)
        raise SystemExit(2)
    print(reopen(Path(sys.argv[1]), int(sys.argv[2])))
