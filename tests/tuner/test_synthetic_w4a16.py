"""make-model --w4a16: the config-only 4-bit variant of a synthetic model (served with --load-format dummy)."""

from __future__ import annotations

import json

import pytest

from tuner.model_config import parse
from tuner.synthetic import write_model


def test_the_4bit_variant_parses_as_compressed_tensors_with_a_quarter_of_the_linear_bytes(tmp_path):
    full = json.loads((write_model(tmp_path / "16", "llama-3-8b", weights=False) / "config.json").read_text())
    q4 = json.loads((write_model(tmp_path / "4", "llama-3-8b", weights=False, w4a16=True)
                     / "config.json").read_text())
    assert "quantization_config" not in full
    spec16, spec4 = parse(full, "16"), parse(q4, "4")
    assert spec16.quant is None
    assert (spec4.quant.method, spec4.quant.bits, spec4.quant.group_size, spec4.quant.zero_point,
            spec4.quant.ignore) == ("compressed-tensors", 4, 128, True, ("lm_head",))
    # the same shape otherwise: only the weights' storage differs
    assert {k: v for k, v in q4.items() if k != "quantization_config"} == full


def test_a_4bit_variant_with_random_weights_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="config-only"):
        write_model(tmp_path / "x", "llama-tiny", weights=True, w4a16=True)
    from tuner.cli import main

    assert main(["make-model", "--out", str(tmp_path / "y"), "--w4a16"]) == 2
    assert "add --no-weights" in capsys.readouterr().err
