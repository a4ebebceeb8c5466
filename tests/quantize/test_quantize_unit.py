"""Fast tests of the quantization plumbing: gate verdicts, cache keys, calibration input, CLI errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tuner.cli import main
from tuner.errors import UsageError
from tuner.quantize import cache
from tuner.quantize.api import QuantizeRecipe, quantize
from tuner.quantize.gate import GateThresholds, judge
from tuner.quantize.recipe import calibration_texts as _calibration

SOUND = {
    "metrics": {
        "ppl_base": 10.0,
        "ppl_quant": 10.3,
        "nll_delta": 0.0296,
        "kl_divergence": 0.02,
        "top1_agreement": 0.91,
        "tokens": 100,
    },
    "layer_cosine": {"a.q_proj": 0.995, "a.o_proj": 0.999},
    "restored_layers": ["a.down_proj"],
    "restored_cosine": {"a.down_proj": 0.97},
}


def _with(**metrics: float) -> dict:
    return {**SOUND, "metrics": {**SOUND["metrics"], **metrics}}


def test_sound_measurements_pass() -> None:
    report = judge(SOUND, GateThresholds())
    assert report.gate == "pass" and report.reasons == ()
    assert report.restored_layers == ("a.down_proj",) and report.min_layer_cosine == 0.995
    assert json.loads(json.dumps(report.to_dict()))["gate"] == "pass"


@pytest.mark.parametrize(
    ("measured", "needle"),
    [
        (_with(nll_delta=0.5), "NLL delta"),
        (_with(kl_divergence=0.3), "KL"),
        (_with(top1_agreement=0.1), "top-1"),
        ({**SOUND, "layer_cosine": {"a.q_proj": 0.95}}, "a.q_proj"),
    ],
)
def test_each_threshold_fails_the_gate(measured: dict, needle: str) -> None:
    report = judge(measured, GateThresholds())
    assert report.gate == "fail"
    assert len(report.reasons) == 1 and needle in report.reasons[0]
    assert needle in report.summary()


def test_thresholds_are_applied_not_hardwired() -> None:
    assert judge(_with(kl_divergence=0.3), GateThresholds(max_kl=0.5)).gate == "pass"


def _model(d: Path, payload: bytes) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text('{"model_type": "llama"}')
    (d / "tokenizer.json").write_text("{}")
    (d / "model.safetensors").write_bytes(payload)
    return d


def test_fingerprint_follows_weight_contents_not_shapes(tmp_path: Path) -> None:
    a = cache.model_fingerprint(_model(tmp_path / "a", b"\x00" * 64))
    same = cache.model_fingerprint(_model(tmp_path / "b", b"\x00" * 64))
    changed = cache.model_fingerprint(_model(tmp_path / "c", b"\x00" * 63 + b"\x01"))
    assert a == same != changed
    (tmp_path / "b" / "README.md").write_text("notes")  # documentation does not change the model
    assert cache.model_fingerprint(tmp_path / "b") == a


def test_cache_key_covers_recipe_calibration_and_extra() -> None:
    base = cache.cache_key("m", QuantizeRecipe().to_job(), "cal", {"samples": 128})
    assert base == cache.cache_key("m", QuantizeRecipe().to_job(), "cal", {"samples": 128})
    assert base != cache.cache_key("m2", QuantizeRecipe().to_job(), "cal", {"samples": 128})
    assert base != cache.cache_key("m", QuantizeRecipe(group_size=64).to_job(), "cal", {"samples": 128})
    assert base != cache.cache_key("m", QuantizeRecipe().to_job(), "cal2", {"samples": 128})
    assert base != cache.cache_key("m", QuantizeRecipe().to_job(), "cal", {"samples": 64})


def test_calibration_jsonl_text_and_messages(tmp_path: Path) -> None:
    f = tmp_path / "calib.jsonl"
    rows = [{"text": f"sample {i}"} for i in range(14)]
    rows += [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}] * 2
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    calib, held, digest = _calibration(str(f), samples=128, seed=0)
    assert calib is not None and len(calib) + len(held) == 16 and len(held) == 2
    assert "hi\nhello" in calib + held
    assert not set(calib) & set(held) - {"hi\nhello"}
    assert digest == cache.file_hash(f)
    assert len(_calibration(str(f), samples=4, seed=0)[0] or []) == 4


def test_calibration_jsonl_errors_name_the_row(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"text": "ok"}\n{"prompt": "no text"}\n')
    with pytest.raises(UsageError, match="row 2"):
        _calibration(str(f), samples=8, seed=0)
    with pytest.raises(UsageError, match="cannot read"):
        _calibration(str(tmp_path / "missing.jsonl"), samples=8, seed=0)


def test_recipe_rejects_bad_values() -> None:
    with pytest.raises(UsageError, match="scheme"):
        QuantizeRecipe(scheme="w3a16")
    with pytest.raises(UsageError, match="group size"):
        QuantizeRecipe(group_size=100)


def test_refuses_to_overwrite_a_foreign_directory(tmp_path: Path) -> None:
    model = _model(tmp_path / "m", b"\x00")
    out = tmp_path / "precious"
    out.mkdir()
    (out / "data.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a slotune quantization"):
        quantize(model, out, python=sys.executable)
    assert (out / "data.txt").read_text() == "keep me"


def test_cli_without_interpreter_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SLOTUNE_QUANTIZE_PYTHON", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no venv of --setup either
    monkeypatch.setattr("tuner.quantize.interpreter.REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["quantize", "--model", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "tune quantize --setup" in err and "Traceback" not in err


def test_cli_autoawq_is_refused_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m", b"\x00")
    code = main(
        [
            "quantize",
            "--model",
            str(model),
            "--out",
            str(tmp_path / "o"),
            "--backend",
            "autoawq",
            "--quantize-python",
            sys.executable,
        ]
    )
    assert code == 2
    assert "autoawq" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_help_says_autoawq_is_deprecated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["quantize", "--help"])
    assert "DEPRECATED" in capsys.readouterr().out


def test_cli_autoawq_without_interpreter_names_the_install_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SLOTUNE_AUTOAWQ_PYTHON", raising=False)
    monkeypatch.setattr("tuner.quantize.interpreter.REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    model = _model(tmp_path / "m", b"\x00")
    code = main(["quantize", "--model", str(model), "--out", str(tmp_path / "o"), "--backend", "autoawq"])
    assert code == 2
    assert "--autoawq" in capsys.readouterr().err
