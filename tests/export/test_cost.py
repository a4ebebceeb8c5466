"""Cost per million output tokens: the arithmetic, the rate it is stated at, the price it uses."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from export_data import ROOT, certify, tiny_best, typed
from hypothesis import given
from hypothesis import strategies as st

from tuner.budget.gpu import GPUProfile
from tuner.errors import ProfileError, UsageError
from tuner.export.cost import (
    NOT_CERTIFIED,
    baseline_basis,
    cost_document,
    cost_lines,
    gpu_price,
    study_costs,
    usd_per_million_output_tokens,
    winner_basis,
)


@given(price=st.floats(0.01, 100.0), tok_s=st.floats(1.0, 1e6))
def test_cost_times_tokens_gives_back_the_hourly_price(price: float, tok_s: float) -> None:
    per_million = usd_per_million_output_tokens(price, tok_s)
    assert math.isclose(per_million * tok_s * 3600 / 1e6, price, rel_tol=1e-9)
    assert usd_per_million_output_tokens(price, tok_s * 2) < per_million


def test_cost_of_one_dollar_an_hour_at_1000_tokens_per_second() -> None:
    # 3.6 M tokens an hour for $1: $0.2778 per million
    assert usd_per_million_output_tokens(1.0, 1000.0) == pytest.approx(1e6 / 3.6e6)
    with pytest.raises(ValueError, match="output tokens/s"):
        usd_per_million_output_tokens(1.0, 0.0)


def test_without_certification_the_search_estimate_is_used_and_said() -> None:
    doc = tiny_best()
    basis = winner_basis(typed(doc))
    assert basis is not None and not basis.certified
    assert (basis.rate_req_s, basis.output_tok_s) == (10.0, 2000.0)
    assert basis.label == NOT_CERTIFIED
    lines = "\n".join(cost_lines(typed(doc), 2.0, "test price"))
    assert lines.count(NOT_CERTIFIED) == 2  # the winner and vLLM's defaults


def test_a_certified_rate_and_its_soak_report_are_used() -> None:
    doc = certify(tiny_best(), "best", 7.5, 1500.0)
    basis = winner_basis(typed(doc))
    assert basis is not None and basis.certified and basis.label == "certified"
    assert (basis.rate_req_s, basis.output_tok_s) == (7.5, 1500.0)
    winner, _ = study_costs(typed(doc), 3.0)
    assert winner is not None and winner.usd_per_million_output_tokens == pytest.approx(3.0 / (1500 * 3600) * 1e6)


def test_a_rate_stated_a_step_below_a_kv_bound_edge_costs_the_held_soaks_tokens_at_that_rate() -> None:
    """Run h on an H100 (results/gpu-llama-3-8b-a30-predict-2026-12-06-h): 66.217 req/s held, 59.595 stated; no
    soak ran at the stated rate, and tune stopped writing best.json for want of one."""
    from tuner.certify.certification import Certification
    from tuner.certify.kv_edge import KvEdge

    doc = certify(tiny_best(), "best", 8.0, 1600.0)  # held at 8.0 with 200 output tokens a request
    cert = Certification.from_dict(doc["certifications"][0])
    edge = KvEdge(8.0, 8.4, "soak", 5, 1.0)
    doc["certifications"][0] = replace(cert, kv_edge=edge).to_dict()
    doc["best"]["certified_rate_req_s"] = doc["certified_rate_req_s"] = edge.stated_req_s  # 7.2
    basis = winner_basis(typed(doc))
    assert basis is not None and basis.certified
    assert basis.rate_req_s == pytest.approx(7.2) and basis.output_tok_s == pytest.approx(1440.0)
    doc["best"]["certified_rate_req_s"] = 7.0  # neither held nor the edge's step: still an error
    with pytest.raises(UsageError, match="no held soak at that rate"):
        winner_basis(typed(doc))


def test_a_rate_stated_a_step_below_a_thin_margin_costs_the_held_soaks_tokens_at_that_rate() -> None:
    from tuner.certify.certification import Certification
    from tuner.certify.margin import ThinMargin

    doc = certify(tiny_best(), "best", 8.0, 1600.0)
    cert = Certification.from_dict(doc["certifications"][0])
    thin = ThinMargin(8.0, "ttft_p95", 2000.0, (1223.0, 1728.0), None)
    doc["certifications"][0] = replace(cert, thin_margin=thin).to_dict()
    doc["best"]["certified_rate_req_s"] = doc["certified_rate_req_s"] = thin.stated_req_s  # 7.2
    basis = winner_basis(typed(doc))
    assert basis is not None and basis.rate_req_s == pytest.approx(7.2) and basis.output_tok_s == pytest.approx(1440.0)


def test_a_certified_rate_without_its_report_is_an_error_not_a_fallback() -> None:
    doc = certify(tiny_best(), "best", 7.5, None)
    with pytest.raises(UsageError, match="no held soak at that rate"):
        winner_basis(typed(doc))


def test_defaults_that_met_the_slo_at_no_load_have_no_cost() -> None:
    doc = tiny_best()
    doc["baseline"]["slo_met"] = False
    assert baseline_basis(typed(doc)) is None
    winner, baseline = study_costs(typed(doc), 2.0)
    assert winner is not None and baseline is None
    assert cost_document(typed(doc), 2.0, "x")["baseline"] is None


def test_the_price_counts_every_gpu_of_the_layout() -> None:
    doc = tiny_best({"tensor_parallel_size": 2, "extra_args": ["--pipeline-parallel-size", "2"]})
    winner, baseline = study_costs(typed(doc), 2.5)
    assert winner is not None and baseline is not None
    assert (winner.gpus, winner.hourly_usd, baseline.gpus) == (4, 10.0, 1)
    assert winner.to_dict()["usd_per_million_output_tokens"] == pytest.approx(10.0 / (2000 * 3600) * 1e6)


def test_price_comes_from_the_measured_gpu_and_the_override_wins() -> None:
    doc = tiny_best()
    assert gpu_price(typed(doc)) == (GPUProfile.load("h200").hourly_price_usd, "GPU profile h200")
    assert gpu_price(typed(doc), 1.25) == (1.25, "--gpu-price")
    assert gpu_price(typed(tiny_best(settings={"gpu_price": 2.2}))) == (2.2, "--gpu-price given to tune")
    assert gpu_price(typed(tiny_best(settings={"gpu_price": 2.2})), 1.25) == (1.25, "--gpu-price")
    emulated = tiny_best(gpu={"profile": "a30", "emulated_on": "h200", "emulation": "memory only"})
    price, source = gpu_price(typed(emulated))
    assert price == GPUProfile.load("h200").hourly_price_usd and "a30's memory was emulated" in source
    price, source = gpu_price(typed(tiny_best(gpu={"profile": "a30"})))
    assert price is None and "--gpu-price" in source
    with pytest.raises(UsageError, match="--gpu-price"):
        gpu_price(typed(doc), -1.0)


def test_profile_price_must_be_a_number(tmp_path) -> None:
    base = (ROOT / "profiles" / "gpus" / "a30.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(base + "hourly_price_usd: cheap\n")
    with pytest.raises(ProfileError, match="hourly_price_usd"):
        GPUProfile.from_yaml(bad)
    good = tmp_path / "good.yaml"
    good.write_text(base + "hourly_price_usd: 0.9\n")
    assert GPUProfile.from_yaml(good).hourly_price_usd == 0.9


def test_committed_study_cost_follows_its_own_figures() -> None:
    doc = json.loads((ROOT / "results" / "h200-llama-3-8b-a30-w4a16" / "best.json").read_text())  # not certified
    winner, baseline = study_costs(typed(doc), 4.0)
    assert winner is not None and baseline is not None
    assert not winner.basis.certified and winner.basis.rate_req_s == doc["best"]["best_rate_req_s"]
    expected = 4.0 / (doc["best"]["metrics"]["throughput_tok_s"] * 3600) * 1e6
    assert winner.usd_per_million_output_tokens == pytest.approx(expected)
    assert baseline.basis.output_tok_s == doc["baseline"]["metrics"]["throughput_tok_s"]


def test_a_committed_certified_study_costs_its_certified_soaks() -> None:
    doc = json.loads((ROOT / "results" / "h200-llama-3-8b-a30-w4a16-longdoc" / "best.json").read_text())
    winner, baseline = study_costs(typed(doc), 4.0)
    assert winner is not None and winner.basis.certified and baseline is not None and baseline.basis.certified
    assert winner.basis.rate_req_s == doc["certified_rate_req_s"] == doc["headline"]["certified_rate_req_s"]
    soak = next(
        s for c in doc["certifications"] if c["trial"] == doc["best"]["trial"] for s in c["soaks"] if s["holds"]
    )
    assert winner.basis.output_tok_s == soak["throughput_tok_s"]


def test_tune_takes_a_gpu_price_and_refuses_a_negative_one() -> None:
    from tuner.settings.tune_settings import resolve

    base = {"model": "m", "gpu": "a30", "slo": "ttft_p95=2s"}
    assert resolve({}, {**base, "gpu_price": 1.5}).gpu_price == 1.5
    assert resolve({}, base).gpu_price is None
    with pytest.raises(UsageError, match="gpu.price"):  # the flag, --gpu-price
        resolve({}, {**base, "gpu_price": -1.0})
