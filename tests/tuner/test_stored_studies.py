"""Every committed results/*/study.db still loads: each trial's stored result reads back through the study's
reader (tuner.search.study.results_of) as typed records, and writes back the JSON it was read from."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest

from tuner.certify.certified import STUDY_ATTR, stored
from tuner.search.study import STUDY_NAME, results_of, storage_for

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted(ROOT.glob("results/*/study.db"))


def same(old, new):  # type: ignore[no-untyped-def]
    """``new`` holds every key of ``old`` with an equal value (keys a later version added may be extra)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and same(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(same, old, new))
    return old == new and type(old) is type(new)


@pytest.mark.parametrize("db", STUDIES, ids=lambda p: p.parent.name)
def test_a_committed_study_reads_back_unchanged(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "study.db"  # opened as a copy: the committed file stays as it is
    shutil.copy(db, copy)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY_NAME, storage=storage_for(f"sqlite:///{copy}"))
    raws = [t.user_attrs["result"] for t in study.get_trials(deepcopy=False) if "result" in t.user_attrs]
    results = results_of(study)
    assert results and len(results) == len(raws)
    for raw, r in zip(raws, results, strict=True):
        assert same(raw, r.to_dict()), f"trial {r.number}"
    latest = {d["trial"]: d for d in study.user_attrs.get(STUDY_ATTR, [])}
    for n, cert in stored(study).items():
        assert same(latest[n], cert.to_dict()), f"certification of trial {n}"
