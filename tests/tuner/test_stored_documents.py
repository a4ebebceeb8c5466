"""Every committed results/*/best.json reads into the study's record (tuner.document.study.StudyDocument): each
key the file holds is a field of it with the same value. A key the readers need and the file lacks is one line
naming the file and the key (exit 2 from the CLI)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from tests.tuner.test_stored_studies import same
from tuner.cli import main
from tuner.document.parts import StoredSettings
from tuner.document.study import StudyDocument
from tuner.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(ROOT.glob("results/*/best.json"))


def reads_back(raw: object, value: object, where: str = "") -> list[str]:
    """Where ``value`` (a field of the record) differs from ``raw`` (the file's JSON there); [] when it holds it."""
    if isinstance(value, StoredSettings):
        return [] if raw == dict(value.values) else [where]
    if hasattr(value, "to_dict"):  # a record with its own writer (ServeConfig, ReportSummary, Certification, …)
        return [] if same(raw, value.to_dict()) else [where]
    if is_dataclass(value):
        names = {f.name for f in fields(value)}
        if not isinstance(raw, dict):
            return [where]
        missing = [f"{where}.{k}: not in the record" for k in raw if k not in names]
        return missing + [w for k, v in raw.items() if k in names for w in reads_back(v, getattr(value, k), k)]
    if isinstance(value, tuple):
        if not isinstance(raw, list) or len(raw) != len(value):
            return [where]
        return [w for i, (r, v) in enumerate(zip(raw, value, strict=True)) for w in reads_back(r, v, f"{where}[{i}]")]
    if isinstance(value, Mapping):
        return [] if raw == dict(value) else [where]
    return [] if raw == value else [f"{where}: {raw!r} read as {value!r}"]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.parent.name)
def test_a_committed_best_json_reads_into_the_record(path: Path) -> None:
    raw = json.loads(path.read_text())
    doc = StudyDocument.from_json(path)
    assert reads_back(raw, doc) == []
    assert doc.source == str(path) and doc.best is not None and doc.best.trial == raw["best"]["trial"]


def test_the_record_reads_old_and_new_variants() -> None:
    """Files from before certification, the headline and the cost read with those parts absent, not invented."""
    old = StudyDocument.from_json(ROOT / "results" / "h200-llama-3-8b-h200" / "best.json")
    assert old.headline is None and old.certifications == () and old.cost is None and old.certified_rate_req_s is None
    assert old.best is not None and old.best.certified_rate_req_s is None and old.best_goodputs_req_s is None
    new = StudyDocument.from_json(ROOT / "results" / "h200-llama-3-8b-a30-w4a16-longdoc" / "best.json")
    assert new.headline is not None and new.headline.certified_rate_req_s == new.certified_rate_req_s
    assert new.confirmation is not None and new.confirmation.calls == 4 and len(new.confirmations) == 4
    assert new.cost is not None and new.cost.winner is not None and new.cost.winner.certified


def _without(doc: dict, dotted: str) -> dict:  # type: ignore[type-arg]
    *parents, last = dotted.split(".")
    node = doc
    for key in parents:
        node = node[key]
    del node[last]
    return doc


@pytest.mark.parametrize("key", ["created", "gpu.profile", "best.config", "best.goodput_req_s", "slo_met"])
def test_a_missing_key_is_one_line_naming_the_file_and_the_key(key: str, tmp_path: Path) -> None:
    raw = json.loads((ROOT / "results" / "h200-llama-3-8b-a30" / "best.json").read_text())
    path = tmp_path / "best.json"
    path.write_text(json.dumps(_without(raw, key)))
    with pytest.raises(UsageError) as err:
        StudyDocument.from_json(path)
    message = str(err.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: no key '{key}'")


def test_a_value_of_another_kind_is_named_too(tmp_path: Path) -> None:
    raw = json.loads((ROOT / "results" / "h200-llama-3-8b-a30" / "best.json").read_text())
    raw["slo_met"], raw["top"][1]["state"] = "yes", "DONE"
    path = tmp_path / "best.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError, match=r"'slo_met' is str, not true or false"):
        StudyDocument.from_json(path)
    raw["slo_met"] = True
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError, match=r"'top\[1\]\.state' is not one of"):
        StudyDocument.from_json(path)
    raw["top"][1]["state"] = "COMPLETE"
    raw["certifications"][0]["soaks"][0].pop("seconds")
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError, match=r"no key 'seconds' in 'certifications\[0\]'"):
        StudyDocument.from_json(path)


@pytest.mark.parametrize("command", [["export", "--format", "compose"], ["cost"], ["retune"]])
def test_the_cli_exits_2_with_the_one_line(command: list[str], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads((ROOT / "results" / "h200-llama-3-8b-a30" / "best.json").read_text())
    (tmp_path / "best.json").write_text(json.dumps(_without(raw, "best.config")))
    assert main([command[0], "--study", str(tmp_path), *command[1:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path / "best.json") in err[0] and "no key 'best.config'" in err[0], err


def test_a_best_json_this_version_writes_reads_back_whole(tmp_path: Path) -> None:
    """What today's writer puts in best.json (capacities, a --confirm run of capacities beside an older one of
    goodputs, speculation that lost) is all in the record: a key it missed would fail here, not in a user's retune."""
    from launch.config import ServeConfig
    from tuner.certify.confirm import Confirmation
    from tuner.certify.confirm_store import stored_run, with_confirmations
    from tuner.report.outputs import summarize, write_outputs
    from tuner.report.report_html import write_report
    from tuner.trial.result import COMPLETE, TrialResult

    def trial(n: int, rate: float, **knobs: object) -> TrialResult:
        cfg = ServeConfig(model="/m", **knobs)  # type: ignore[arg-type]
        return TrialResult(n, COMPLETE, n == 0, cfg, slo_met=True, goodput_req_s=rate * 0.9, best_rate=rate)

    results = [
        trial(0, 2.0),
        trial(1, 3.0, max_num_seqs=64),
        trial(2, 1.0, speculative_method="ngram", num_speculative_tokens=3),
    ]
    old = {"best_trial": 1, "rival_trial": 0, "rival_is_baseline": True, "best_goodput_req_s": [2.7]}
    old.update(rival_goodput_req_s=[1.8], finished="2026-11-30T10:00:00+00:00", devices=None)
    runs = [old, stored_run(Confirmation(1, 0, True, (3.1,), (2.1,)), None, "2026-12-02T12:00:00+00:00")]
    meta = {
        "created": "2026-12-02T12:00:00+00:00", "slo": "ttft_p95=2s", "workload": "chat", "notes": [],
        "gpu": {"profile": "cpu", "emulated_on": None, "emulation": None},
        "model": {"path": "/m", "fingerprint": "f"}, "vllm": {"version": "0.32.0", "python": "python"},
    }  # fmt: skip
    meta, confirmation = with_confirmations(meta, runs, summarize(results))
    write_outputs(tmp_path, results, meta, lambda *a, **k: None, write_report, confirmation=confirmation)
    raw = json.loads((tmp_path / "best.json").read_text())
    assert {"best_capacities_req_s", "speculation_lost", "confirmation"} <= raw.keys()
    doc = StudyDocument.from_json(tmp_path / "best.json")
    assert reads_back(raw, doc) == []
    assert (
        doc.confirmation is not None
        and doc.confirmation.measure == "capacity"
        and doc.confirmation.best_req_s == (3.1,)
    )
    assert doc.confirmations[0].best_goodput_req_s == (2.7,) and doc.confirmations[1].best_capacity_req_s == (3.1,)
