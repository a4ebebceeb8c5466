"""make-model --w4a16: the config-only 4-bit variant of a synthetic model (served with --load-format dummy)."""

from __future__ import annotations

import json

import pytest

from tuner.model.spec import ModelSpec
from tuner.synthetic import write_model


def test_the_4bit_variant_parses_as_compressed_tensors_and_its_weights_shrink(tmp_path):
    full = json.loads((write_model(tmp_path / "16", "llama-3-8b", weights=False) / "config.json").read_text())
    q4 = json.loads((write_model(tmp_path / "4", "llama-3-8b", weights=False, w4a16=True) / "config.json").read_text())
    assert "quantization_config" not in full
    spec16, spec4 = ModelSpec.from_config(full, "16"), ModelSpec.from_config(q4, "4")
    assert spec16.quant is None
    assert (
        spec4.quant.method,
        spec4.quant.bits,
        spec4.quant.group_size,
        spec4.quant.zero_point,
        spec4.quant.ignore,
    ) == ("compressed-tensors", 4, 128, True, ("lm_head",))
    # the same shape otherwise: only the weights' storage differs
    assert {k: v for k, v in q4.items() if k != "quantization_config"} == full
    assert spec4.num_params == spec16.num_params
    # Llama-3-8B: 15.0 GiB in 16 bits; 4-bit layers (+ scales, zero points) with 16-bit embeddings and
    # lm_head (2 x 128256 x 4096 x 2 B = 1.96 GiB) come to 5.3 GiB
    gib = 1024**3
    assert 14.9 < spec16.weight_bytes / gib < 15.0
    assert 5.3 < spec4.weight_bytes / gib < 5.4


def test_a_4bit_variant_with_random_weights_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="config-only"):
        write_model(tmp_path / "x", "llama-tiny", weights=True, w4a16=True)
    from tuner.cli import main

    assert main(["make-model", "--out", str(tmp_path / "y"), "--w4a16"]) == 2
    assert "add --no-weights" in capsys.readouterr().err
