"""Fixtures for launch tests: the recorded ``--help=all`` of three vLLM releases as VllmInfo."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from launch.vllm_flags import VllmInfo

DATA = Path(__file__).parent / "data"
VERSIONS = ("0.26.0", "0.32.0", "0.33.0")


def _info(version: str, platform: str = "cuda", python: str = "/opt/py/bin/python") -> VllmInfo:
    text = (DATA / f"help-options-{version}.txt").read_text()
    return VllmInfo.from_help_text(text, python=python, version=version, platform=platform)


@pytest.fixture
def make_info() -> Callable[..., VllmInfo]:
    """``make_info("0.26.0", platform="cuda")`` → VllmInfo parsed from the recorded help."""
    return _info


@pytest.fixture(params=VERSIONS)
def any_info(request: pytest.FixtureRequest) -> VllmInfo:
    return _info(request.param)


@pytest.fixture
def launch_data() -> Path:
    return DATA
