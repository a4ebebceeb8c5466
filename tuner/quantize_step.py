"""The pipeline's first step: quantize when asked (``quantize: awq``) and offer the result as a knob."""

from __future__ import annotations

from tuner.inputs import Inputs
from tuner.settings import TuneSettings


def maybe_quantize(settings: TuneSettings, inputs: Inputs) -> str | None:
    """Quantized model dir to search beside the 16-bit one, or None when not asked."""
    if settings.quantize != "awq":
        return None
    from tuner.quantize import default_quantize_python, quantize

    out = inputs.out / "quantized"
    result = quantize(inputs.model_dir, out, python=settings.quantize_python or default_quantize_python(),
                      on_progress=lambda m: print(f"[quantize] {m}", flush=True))
    print(f"[quantize] {'reused cached' if result.cached else 'wrote'} {result.out_dir}: gate {result.quality.gate}")
    return str(result.out_dir)
