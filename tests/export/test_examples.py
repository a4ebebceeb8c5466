"""docs/deploy.md's export examples are what `tune export` and `tune cost` write today (scripts/export-examples.sh)."""

from __future__ import annotations

import pytest
from export_data import FORMATS, HELP, ROOT

from tuner.export.cost import cost_lines, gpu_price
from tuner.export.formats import export_study
from tuner.export.study import read_study

STUDY = "results/h200-llama-3-8b-a30-w4a16-longdoc"


@pytest.mark.parametrize("fmt", FORMATS)
def test_docs_deploy_files_are_current(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the header names the study and the flags file as the script passes them
    text = export_study(STUDY, fmt, vllm_help=str(HELP["0.26.0"].relative_to(ROOT)))
    assert (ROOT / "docs" / "deploy" / f"{fmt}.yaml").read_text() == text
    page = (ROOT / "docs" / "deploy.md").read_text()
    assert (text.rstrip() in page) if fmt == "compose" else f"(deploy/{fmt}.yaml)" in page


def test_readme_cost_lines_are_current() -> None:
    doc = read_study(ROOT / STUDY).doc
    lines = "\n".join(cost_lines(doc, *gpu_price(doc))) + "\n"
    assert (ROOT / "docs" / "deploy" / "cost.txt").read_text() == lines
    assert lines.rstrip() in (ROOT / "docs" / "deploy.md").read_text()
