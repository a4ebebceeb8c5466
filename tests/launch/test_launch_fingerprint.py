from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch import fingerprint as fp
from launch.fingerprint import hash_model_dir, model_fingerprint


def _model(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    (d / "tokenizer.json").write_text('{"vocab": {"a": 0}}')
    (d / "model.safetensors.index.json").write_text('{"weight_map": {"w": "model-00001.safetensors"}}')
    (d / "model-00001.safetensors").write_bytes(bytes(range(256)) * 64)
    (d / "README.md").write_text("about the model")
    return d


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLOTUNE_CACHE_DIR", str(tmp_path / "cache"))


def test_same_shape_weight_change_changes_it(tmp_path: Path) -> None:
    m = _model(tmp_path / "m")
    before = model_fingerprint(m)
    assert before == model_fingerprint(m) == hash_model_dir(str(m))
    w = m / "model-00001.safetensors"
    data = bytearray(w.read_bytes())
    data[1000] ^= 1  # one bit, same size
    w.write_bytes(bytes(data))
    assert model_fingerprint(m) != before


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors.index.json"])
def test_config_tokenizer_and_index_count(tmp_path: Path, name: str) -> None:
    m = _model(tmp_path / "m")
    before = model_fingerprint(m)
    (m / name).write_text((m / name).read_text() + " ")
    assert model_fingerprint(m) != before


def test_readme_and_location_do_not_count(tmp_path: Path) -> None:
    a, b = _model(tmp_path / "a"), _model(tmp_path / "elsewhere" / "b")
    (b / "README.md").write_text("different prose")
    assert model_fingerprint(a) == model_fingerprint(b)


def test_big_files_are_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _model(tmp_path / "m")
    first = model_fingerprint(m)
    opened: list[str] = []
    real_open = open

    def counting_open(file, *a, **k):  # noqa: ANN001
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr("builtins.open", counting_open)
    assert model_fingerprint(m) == first
    assert not any(p.endswith(".safetensors") for p in opened)  # served from the (size, mtime) cache
    os.utime(m / "model-00001.safetensors", ns=(1, 1))  # touched: hashed again
    assert model_fingerprint(m) == first
    assert any(p.endswith(".safetensors") for p in opened)


def test_not_a_model_dir(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no config.json"):
        model_fingerprint(tmp_path)


def test_standalone_copy_matches(tmp_path: Path) -> None:
    """launch.sh embeds hash_model_dir's source; run it as a plain script like launch.sh does."""
    import inspect

    m = _model(tmp_path / "m")
    src = (
        "from __future__ import annotations\nimport os\nimport sys\n"
        + inspect.getsource(fp.hash_model_dir)
        + "\nprint(hash_model_dir(sys.argv[1]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-", str(m)], input=src, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == model_fingerprint(m)
