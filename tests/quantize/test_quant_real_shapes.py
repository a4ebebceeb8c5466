"""Fast tests of quantization on real shapes: the group size per model, the worker's error as one line,
and the interpreter a pip-installed slotune finds or builds (``tune quantize --setup``)."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuner.errors import QuantizeError, UsageError
from tuner.model.spec import ModelSpec
from tuner.quantize.groups import GROUP_SIZES, choose_group_size
from tuner.quantize.interpreter import default_python, run_worker
from tuner.quantize.setup import setup_commands, setup_interpreter
from tuner.synthetic import shape_config

# SmolLM2-135M-Instruct's config.json (the fields the shape needs)
SMOLLM2 = {
    **shape_config("llama-tiny"),
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
}


def test_smollm2_gets_group_64_and_says_why() -> None:
    choice = choose_group_size(ModelSpec.from_config(SMOLLM2))
    assert choice.group_size == 64 and not choice.misfits and not choice.requested
    assert "group size 64" in choice.line() and "576" in choice.line()


def test_llama_shape_keeps_group_128() -> None:
    choice = choose_group_size(ModelSpec.from_config(shape_config("llama-3-8b")))
    assert choice.group_size == 128 and choice.ignore_patterns() == ()


def test_a_given_group_size_wins_and_misfits_stay_16bit() -> None:
    choice = choose_group_size(ModelSpec.from_config(SMOLLM2), requested=128)
    assert choice.group_size == 128 and choice.requested
    widths = choice.widths
    assert set(choice.misfits) == {k for k, w in widths.items() if w % 128}
    assert "model.layers.N.mlp.down_proj" not in choice.misfits  # 1536 = 12 x 128
    line = choice.line()
    assert "--group-size" in line and "kept 16-bit" in line and "q_proj (576)" in line
    pattern = next(p for p in choice.ignore_patterns() if "q_proj" in p)
    assert re.fullmatch(pattern.removeprefix("re:"), "model.layers.17.self_attn.q_proj")
    assert not re.fullmatch(pattern.removeprefix("re:"), "model.layers.17.self_attn.o_proj_x")


@given(hidden=st.integers(1, 64).map(lambda k: 32 * k), inter=st.integers(1, 128).map(lambda k: 32 * k))
def test_the_chosen_group_is_the_largest_that_divides_every_layer(hidden: int, inter: int) -> None:
    cfg = {**shape_config("llama-tiny"), "hidden_size": hidden, "intermediate_size": inter, "head_dim": 32}
    cfg["num_attention_heads"] = hidden // 32
    cfg["num_key_value_heads"] = 1
    choice = choose_group_size(ModelSpec.from_config(cfg))
    assert not choice.misfits
    assert all(w % choice.group_size == 0 for w in choice.widths.values())
    assert all(any(w % g for w in choice.widths.values()) for g in GROUP_SIZES if g > choice.group_size)


def test_no_group_fits_keeps_those_layers_16bit() -> None:
    cfg = {**shape_config("llama-tiny"), "intermediate_size": 1000}  # 1000 is no multiple of 32
    choice = choose_group_size(ModelSpec.from_config(cfg))
    assert choice.group_size == 32 and choice.misfits == ("model.layers.N.mlp.down_proj",)


def _fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_workers_error_reaches_the_user_as_one_line(tmp_path: Path) -> None:
    py = _fake_python(
        tmp_path,
        "echo 'Traceback (most recent call last):'; echo '  File x, line 1'; "
        "echo 'slotune-quant-error: ValueError: group_size 128 does not divide 576 columns'; "
        "echo 'ValueError: group_size 128 does not divide 576 columns'; exit 1",
    )
    with pytest.raises(QuantizeError) as err:
        run_worker(py, {}, tmp_path / "log", None)
    message = str(err.value)
    assert "\n" not in message and "ValueError: group_size 128 does not divide 576 columns" in message
    assert str(tmp_path / "log") in message and "Traceback" not in message


def test_a_worker_that_dies_silently_names_its_last_line(tmp_path: Path) -> None:
    py = _fake_python(tmp_path, "echo 'loading'; echo 'Killed'; exit 137")
    with pytest.raises(QuantizeError, match=r"code 137: Killed \(full log") as err:
        run_worker(py, {}, tmp_path / "log", None)
    assert "\n" not in str(err.value)


def test_this_interpreter_quantizes_when_it_has_llmcompressor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.util

    monkeypatch.delenv("SLOTUNE_QUANTIZE_PYTHON", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "llmcompressor" else real(n, *a))
    assert default_python() == sys.executable


def test_the_setup_venv_is_found_after_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SLOTUNE_QUANTIZE_PYTHON", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tuner.quantize.interpreter.REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    if __import__("importlib.util").util.find_spec("llmcompressor") is not None:
        pytest.skip("this interpreter has llm-compressor: it is chosen first")
    assert default_python() is None
    ran: list[list[str]] = []

    def run(cmd: list[str]) -> int:  # a pip that works: the venv's python appears
        ran.append(list(cmd))
        if cmd[1:3] == ["-m", "venv"]:
            (Path(cmd[3]) / "bin").mkdir(parents=True)
            (Path(cmd[3]) / "bin" / "python").write_text("")
        return 0

    py = setup_interpreter(run=run)
    assert default_python() == str(py) == str(tmp_path / "cache" / "slotune" / "quantize-venv" / "bin" / "python")
    assert any("llmcompressor==0.14.0.1" in c for cmd in ran for c in cmd)


def test_setup_pins_torch_beside_llmcompressor() -> None:
    cmds = setup_commands(Path("/v"), "python3", "torch==2.13.0", "llmcompressor==0.14.0.1")
    assert cmds[0] == ["python3", "-m", "venv", "/v"]
    assert ["llmcompressor==0.14.0.1", "torch==2.13.0"] == cmds[3][-2:]


def test_a_failing_pip_is_one_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="failed at .*pip install"):
        setup_interpreter(tmp_path / "v", run=lambda cmd: 0 if "venv" in cmd else 1)


def test_cli_setup_alone_prints_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tuner.cli import main

    monkeypatch.setattr("tuner.quantize.setup.setup_interpreter", lambda **_k: tmp_path / "py")
    assert main(["quantize", "--setup"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "py")
    assert main(["quantize", "--model", "m"]) == 2  # --out missing: one line, exit 2
