"""What ``tune --predict`` writes: predicted against measured for launched trials only (trials.csv, best.json,
the report), an empty column without --predict, and bad --predict settings refused in one line."""

from __future__ import annotations

import pytest

from launch.config import ServeConfig
from tuner.search.predict_search import PREDICTED_ATTR
from tuner.trial.result import COMPLETE, TrialResult

BASE = ServeConfig(model="/m")


def test_files_state_predicted_against_measured_only_for_launched_trials(tmp_path):
    import json

    import pandas as pd

    from loadtest.dist import Dist
    from loadtest.summary import ReportSummary
    from tuner.report.outputs import write_outputs
    from tuner.report.report_html import write_report

    def res(n, rate, predicted=None, **cfg):
        extra = {} if predicted is None else {PREDICTED_ATTR: predicted}
        return TrialResult(
            n,
            COMPLETE,
            n == 0,
            ServeConfig(model="/m", **cfg),
            slo_met=True,
            goodput_req_s=rate,
            best_rate=rate,
            report=ReportSummary(ttft_ms=Dist(p95=100.0)),
            extra=extra,
        )

    attrs = {"demonstrated_error": None, "extrapolated": None, "unseen": None}
    results = [
        res(0, 10.0),
        res(1, 20.0, {**attrs, "predicted_capacity_req_s": 22.0}, max_num_seqs=64),
        res(
            2,
            8.0,
            {**attrs, "predicted_capacity_req_s": None, "unseen": "engine family x was not calibrated"},
            speculative_method="ngram",
            num_speculative_tokens=2,
        ),
    ]
    write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a: None, write_report)
    frame = pd.read_csv(tmp_path / "trials.csv")
    assert pd.isna(frame.loc[0, "predicted_capacity_req_s"]) and pd.isna(frame.loc[2, "predicted_capacity_req_s"])
    assert frame.loc[1, "predicted_capacity_req_s"] == 22.0
    best = json.loads((tmp_path / "best.json").read_text())
    assert [p["trial"] for p in best["predictions"]] == [1, 2]
    assert best["predictions"][0]["error"] == pytest.approx(0.1) and best["predictions"][1]["error"] is None
    assert best["prediction_median_abs_error"] == pytest.approx(0.1)
    html = (tmp_path / "report.html").read_text()
    assert "Predicted vs measured" in html and "+10.0 %" in html and "engine family x was not calibrated" in html
    assert best["prediction_median_abs_error_vs_certified"] is None and "error vs held" not in html

    # --certify each: trial 1 certified 16.0 req/s; the error against it is stated beside the search's
    from tuner.certify.certification import Certification, Soak

    held = Soak(16.0, 60.0, True, (), 16.0, 160.0, 16.0, {"ttft_p95": 900.0}, {}, ReportSummary())
    certs = {1: Certification(1, 20.0, 60.0, (held,))}
    write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a: None, write_report, None, certs)
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["predictions"][0]["certified_req_s"] == best["predictions"][0]["held_req_s"] == 16.0
    assert best["predictions"][0]["error_vs_held"] == pytest.approx(0.375)
    assert best["prediction_median_abs_error_vs_held"] == pytest.approx(0.375)
    html = (tmp_path / "report.html").read_text()
    assert "error vs held" in html and "+37.5 %" in html and "against the rates the soaks held" in html
    from tuner.report.predict_report import certified_lines

    assert certified_lines(results, certs) == [
        "--predict against the held rates: trial 1 predicted 22.000 req/s, held 16.000 (+37.5 %); "
        "median |error| +37.5 % over 1"
    ]
    assert certified_lines(results, {}) == []


def test_the_prediction_is_judged_against_the_held_rate_not_a_kv_step_below_it(tmp_path):
    import json

    from loadtest.dist import Dist
    from loadtest.summary import ReportSummary
    from tuner.certify.certification import Certification, Soak
    from tuner.certify.edge import SOAK
    from tuner.certify.kv_edge import KvEdge
    from tuner.report.outputs import write_outputs
    from tuner.report.predict_report import certified_lines
    from tuner.report.report_html import write_report

    attrs = {"demonstrated_error": None, "extrapolated": None, "unseen": None, "predicted_capacity_req_s": 21.0}
    results = [
        TrialResult(0, COMPLETE, True, BASE, slo_met=True, goodput_req_s=10.0, best_rate=10.0),
        TrialResult(
            1,
            COMPLETE,
            False,
            ServeConfig(model="/m", max_num_seqs=64),
            slo_met=True,
            goodput_req_s=20.0,
            best_rate=20.0,
            report=ReportSummary(ttft_ms=Dist(p95=100.0)),
            extra={PREDICTED_ATTR: attrs},
        ),
    ]
    held = Soak(20.0, 60.0, True, (), 20.0, 200.0, 20.0, {"ttft_p95": 900.0}, {}, ReportSummary())
    edge = KvEdge(20.0, 22.0, SOAK, 3, 1.0)
    certs = {1: Certification(1, 20.0, 60.0, (held,), kv_edge=edge)}
    write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a: None, write_report, None, certs)
    row = json.loads((tmp_path / "best.json").read_text())["predictions"][0]
    assert row["held_req_s"] == 20.0 and row["certified_req_s"] == pytest.approx(18.0)
    assert row["error_vs_held"] == pytest.approx(0.05)  # the model predicts the edge, not the step below it
    assert row["error_vs_certified"] == pytest.approx(21.0 / 18.0 - 1)
    assert certified_lines(results, certs) == [
        "--predict against the held rates: trial 1 predicted 21.000 req/s, held 20.000 (+5.0 %), stated 18.000 a "
        "step lower (KV-bound edge); median |error| +5.0 % over 1"
    ]
    assert "<td>20.000</td><td>+5.0 %</td><td>18.000</td>" in (tmp_path / "report.html").read_text()


def test_a_study_without_predict_writes_an_empty_column_and_no_predictions(tmp_path):
    import json

    import pandas as pd

    from tuner.report.outputs import write_outputs
    from tuner.report.report_html import write_report

    r = TrialResult(0, COMPLETE, True, BASE, slo_met=True, goodput_req_s=5.0, best_rate=5.0)
    write_outputs(tmp_path, [r], {"slo": "ttft_p95=2s"}, lambda *a: None, write_report)
    assert pd.read_csv(tmp_path / "trials.csv")["predicted_capacity_req_s"].isna().all()
    assert "predictions" not in json.loads((tmp_path / "best.json").read_text())
    assert "Predicted vs measured" not in (tmp_path / "report.html").read_text()


# ---- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--predict-sample", "0"], "--predict-sample '0': must be a whole number of configurations from 1 to 10000"),
        (["--predict-sample", "many"], "--predict-sample 'many': must be a whole number"),
        (["--predict", "--devices", "0,1"], "--predict launches one trial at a time"),
        (["--predict", "--slo", "itl_p99=100ms"], "--predict: the performance model does not predict itl_p99"),
    ],
)
def test_bad_predict_settings_exit_2_with_one_line(extra, needle, tmp_path, monkeypatch, capsys):
    from tuner.cli import main
    from tuner.synthetic import write_model

    monkeypatch.chdir(tmp_path)
    model = write_model(tmp_path / "m", "llama-tiny", weights=False)
    args = ["--model", str(model), "--gpu", "h200", "--slo", "ttft_p95=2s", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
