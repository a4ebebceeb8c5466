"""Fixtures for the export tests (helpers and data paths: export_data.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def write_study(tmp_path: Path):
    def write(doc: dict[str, Any], name: str = "study") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "best.json").write_text(json.dumps(doc))
        return folder

    return write


@pytest.fixture(autouse=True)
def _no_probe_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flags come only from what a test passes: an empty slotune cache."""
    monkeypatch.setenv("SLOTUNE_CACHE_DIR", str(tmp_path / "cache"))
