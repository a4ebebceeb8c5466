"""Every committed study states one capacity: launch.sh's header, report.html, trials.csv and the folder's README
say what best.json's headline says (the winner's trial, its rate, its certified rate). A study whose files were
written or re-written apart (a resumed certification, a hand edit) fails here, naming the file and both values."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# studies whose best.json has the one headline every output reads (older ones wrote each file on its own), nested
# ones included (a run folder's predict/, ten/, ...)
HEADLINED = sorted(
    p.parent for p in ROOT.glob("results/**/best.json") if isinstance(json.loads(p.read_text()).get("headline"), dict)
)


def disagreements(study: Path) -> list[str]:
    """Where a file of ``study`` states another winner or rate than best.json's headline; [] when all agree."""
    headline = json.loads((study / "best.json").read_text())["headline"]
    trial, rate, certified = headline["best_trial"], headline["rate_req_s"], headline["certified_rate_req_s"]
    found: list[str] = []
    launch = study / "launch.sh"
    if launch.exists():
        text = launch.read_text()
        stated = re.search(r"^# slotune: trial (\d+),", text, re.M)
        if not stated or int(stated.group(1)) != trial:
            found.append(f"launch.sh: trial {stated and stated.group(1)}, best.json: trial {trial}")
        capacity = re.search(r"^# capacity: ([\d.]+) req/s", text, re.M)
        if rate is not None and (not capacity or capacity.group(1) != f"{rate:.3f}"):
            found.append(f"launch.sh: capacity {capacity and capacity.group(1)}, best.json: {rate:.3f}")
    report = study / "report.html"
    if report.exists() and headline["line"] not in html.unescape(report.read_text()):
        found.append(f"report.html lacks best.json's headline {headline['line']!r}")
    spare = json.loads((study / "best.json").read_text()).get("spare_speed")
    if spare and report.exists() and spare["line"] not in html.unescape(report.read_text()):
        found.append(f"report.html lacks best.json's spare speed {spare['line']!r}")
    if spare and launch.exists() and f"# {spare['line']}\n" not in launch.read_text():
        found.append(f"launch.sh lacks best.json's spare speed {spare['line']!r}")
    if spare and (spare["trial"] != trial or abs(spare["rate_req_s"] - (certified or 0.0)) > 5e-4):
        found.append(f"best.json: spare speed of trial {spare['trial']} at {spare['rate_req_s']}, stated {certified}")
    table = study / "trials.csv"
    if table.exists():
        rows = {int(r["number"]): r for r in csv.DictReader(table.open())}
        cell = rows.get(trial, {}).get("certified_rate_req_s") or None
        if (cell is None) != (certified is None) or (cell and abs(float(cell) - certified) > 5e-4):
            found.append(f"trials.csv: trial {trial} certified {cell}, best.json: {certified}")
    readme = study / "README.md"
    if readme.exists() and certified is not None and f"{certified:.3f}" not in readme.read_text():
        found.append(f"README.md never states the certified {certified:.3f} req/s")
    return found


@pytest.mark.parametrize("study", HEADLINED, ids=lambda p: p.name)
def test_a_committed_study_states_one_capacity(study: Path) -> None:
    assert disagreements(study) == []


def test_a_rewritten_file_is_named(tmp_path: Path) -> None:
    study = tmp_path / "study"
    study.mkdir()
    source = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-03-d"
    for name in ("best.json", "launch.sh", "report.html", "trials.csv", "README.md"):
        (study / name).write_text((source / name).read_text())
    assert disagreements(study) == []
    launch = study / "launch.sh"
    launch.write_text(launch.read_text().replace("# capacity: 62.246 req/s", "# capacity: 71.812 req/s"))
    (study / "README.md").write_text("certified 65.129 req/s\n")
    assert disagreements(study) == [
        "launch.sh: capacity 71.812, best.json: 62.246",
        "README.md never states the certified 62.246 req/s",
    ]


def test_a_spare_speed_the_report_does_not_state_is_named(tmp_path: Path) -> None:
    study = tmp_path / "study"
    study.mkdir()
    source = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-03-d"
    doc = json.loads((source / "best.json").read_text())
    trial, rate = doc["headline"]["best_trial"], doc["headline"]["certified_rate_req_s"]
    doc["spare_speed"] = {"trial": trial, "rate_req_s": rate, "line": "spare speed of trial 2: a line"}
    (study / "best.json").write_text(json.dumps(doc))
    (study / "report.html").write_text((source / "report.html").read_text())
    assert disagreements(study) == ["report.html lacks best.json's spare speed 'spare speed of trial 2: a line'"]
    doc["spare_speed"]["rate_req_s"] = rate * 1.1
    (study / "best.json").write_text(json.dumps(doc))
    (study / "report.html").write_text("<p>" + doc["headline"]["line"] + "spare speed of trial 2: a line</p>")
    assert disagreements(study) == [f"best.json: spare speed of trial {trial} at {rate * 1.1}, stated {rate}"]
