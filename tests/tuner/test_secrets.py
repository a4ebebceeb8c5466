"""No credential is printed or written (#25): ``--storage postgresql://user:PASSWORD@host/db`` once put the
password into best.json (``settings.storage``), report.html and the console's resolved-settings line."""

from __future__ import annotations

import io
import json
import sys

import pytest

from launch.vllm_flags import VllmInfo
from loadtest.redact import mask, without_password
from loadtest.slo import parse_slos
from loadtest.workload import load_workload
from tuner.budget.gpu import GPUProfile
from tuner.errors import UsageError
from tuner.inputs import Inputs
from tuner.model.spec import ModelSpec
from tuner.settings.tune_settings import resolve

SECRET = "s3cr3t-Pa55"
URL = f"postgresql+psycopg://tuner:{SECRET}@127.0.0.1:1/slotune"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (URL, "postgresql+psycopg://tuner:***@127.0.0.1:1/slotune"),
        ("mysql://a:p@ss@h/db", "mysql://a:***@h/db"),  # a password holding '@'
        ("sqlite:////srv/a b/study.db", "sqlite:////srv/a b/study.db"),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("x?password=abc&token=def HF_TOKEN=hf_x api_key=k", "x?password=***&token=*** HF_TOKEN=*** api_key=***"),
        ("max_num_batched_tokens=8192 output_tokens=16", "max_num_batched_tokens=8192 output_tokens=16"),
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ],
)
def test_mask(text, masked):
    assert mask(text) == masked


def test_a_masked_url_read_back_asks_the_driver_for_the_password():
    assert without_password(mask(URL)) == "postgresql+psycopg://tuner@127.0.0.1:1/slotune"


def _inputs(tmp_path) -> Inputs:
    from tuner.synthetic import write_model

    model = write_model(tmp_path / "m", "llama-tiny", weights=False)
    settings = resolve({}, {"model": str(model), "gpu": "cpu", "slo": "ttft_p95=2s", "storage": URL})
    info = VllmInfo(python=sys.executable, version="0.32.0", flags=frozenset(), platform="cpu")
    return Inputs(
        settings,
        parse_slos(settings.slo),
        GPUProfile.load("cpu"),
        None,
        load_workload("chat"),
        ModelSpec.from_dir(model),
        model,
        info,
        tmp_path / "out",
        "2",
        (),
    )


def test_best_json_report_and_console_never_hold_the_password(tmp_path):
    from tuner.certify.headline import headline
    from tuner.pipeline import tune
    from tuner.report.outputs import best_document, summarize
    from tuner.report.report_html import write_report
    from tuner.search.progress import Progress
    from tuner.tune_setup import metadata

    inp = _inputs(tmp_path)
    meta = metadata(inp, {"vllm": "0.32.0"}, "f" * 64)
    assert meta["settings"]["storage"] == mask(URL)
    summary = summarize([])
    head = headline(summary, {}, None)
    best = json.dumps(best_document(summary, meta, head))
    write_report(tmp_path / "report.html", [], summary, meta, headline=head)
    assert SECRET not in best and SECRET not in (tmp_path / "report.html").read_text()

    console = io.StringIO()
    with pytest.raises(UsageError) as info:  # the storage is unreachable: the run stops after its first lines
        tune(inp, versions={"vllm": "0.32.0"}, progress=Progress(1, console))
    assert "resolved settings" in console.getvalue() and "tuner:***@" in console.getvalue()
    assert SECRET not in console.getvalue() and SECRET not in str(info.value)
    assert not any(SECRET in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
