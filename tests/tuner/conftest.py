"""Fixtures of the tuner's tests that run ``tune``'s pipeline without vLLM: the trials are stand-ins."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture()
def offline_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """``make(**settings)``: the Inputs of a tune of the tiny config-only Llama on the cpu profile (ttft_p95=2s,
    out ``tmp_path/study``, no soak), with vLLM's probe answered as 0.32.0 and launch.sh not written (it
    needs the probed vLLM's flags). ``settings`` override or add to those."""
    import launch.script
    from launch.vllm_flags import VllmInfo
    from tuner import inputs as inputs_mod
    from tuner.settings.tune_settings import resolve
    from tuner.synthetic import write_model

    model = write_model(tmp_path / "m", "llama-tiny", weights=False)
    monkeypatch.setattr(
        inputs_mod,
        "probe_vllm",
        lambda python: VllmInfo.from_help_text("", python=python, version="0.32.0", platform="cpu"),
    )
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setattr(launch.script, "write_launch_script", lambda *a, **k: None)

    def make(**settings: Any) -> Any:
        base = {"model": str(model), "gpu": "cpu", "slo": "ttft_p95=2s", "out": str(tmp_path / "study")}
        return inputs_mod.load_inputs(resolve({}, {**base, "soak_seconds": 0.0, **settings}))

    return make
