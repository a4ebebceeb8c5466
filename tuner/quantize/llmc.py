"""llm-compressor backend of the quantization worker (runs under the quantization interpreter).

AWQ smoothing + W{bits}A16 group quantization with ``oneshot``, saved in the compressed-tensors
``pack-quantized`` format. Per-layer cosines are measured on the held-out sequences with the
fake-quantized model that ``oneshot`` leaves in memory (see tuner.quantize.metrics.layer_cosines).
Imports: torch, transformers, llm-compressor (+ datasets) and tuner.quantize.metrics only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tuner.quantize import metrics

NAME = "llmcompressor"
EVAL_DTYPE = "auto"  # the reloaded compressed model and the reference run in the checkpoint's dtype


def prepare() -> None:
    if not torch.accelerator.is_available():  # llm-compressor pins intermediates, which needs a device
        from llmcompressor.pipelines.cache import IntermediatesCache

        IntermediatesCache.pin_memory = lambda self, *a, **k: None  # type: ignore[method-assign]


def _awq_modifier() -> Any:
    """AWQ that skips smoothing mappings whose balance layers all stay 16-bit.

    llm-compressor 0.14.0.1 keeps such a mapping when its smooth layer is quantized (v_proj → o_proj
    with o_proj restored) and then divides by zero in ``_compute_layer_means``; smoothing protects the
    balance layers' quantization only, so with none quantized there is nothing to do.
    """
    from llmcompressor.modifiers.transform.awq import AWQModifier

    class RestorationAwareAWQ(AWQModifier):
        def _set_resolved_mappings(self, model: Any) -> None:
            super()._set_resolved_mappings(model)
            resolved: list[Any] = self._resolved_mappings  # type: ignore[has-type]
            self._resolved_mappings = [
                m for m in resolved if any(hasattr(b, "quantization_scheme") for b in m.balance_layers)
            ]

    return RestorationAwareAWQ()


def _recipe(recipe: dict, ignore: list[str]) -> list[Any]:
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from llmcompressor.modifiers.quantization import QuantizationModifier

    weights = QuantizationArgs(
        num_bits=recipe["bits"],
        type="int",
        strategy="group",
        group_size=recipe["group_size"],
        symmetric=recipe["symmetric"],
        dynamic=False,
    )
    scheme = QuantizationScheme(targets=["Linear"], weights=weights)
    return [_awq_modifier(), QuantizationModifier(config_groups={"group_0": scheme}, ignore=list(ignore))]


def quantize_once(
    job: dict, calib: list[torch.Tensor], held: list[torch.Tensor], ignore: list[str]
) -> tuple[Any, dict[str, float]]:
    """The calibrated (fake-quantized) model and each quantized Linear's output cosine on ``held``."""
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.utils import dispatch_for_generation
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(job["model_dir"], dtype="auto")
    data = Dataset.from_dict(
        {"input_ids": [s.tolist() for s in calib], "attention_mask": [[1] * len(s) for s in calib]}
    )
    oneshot(
        model=model,
        dataset=data,
        recipe=_recipe(job["recipe"], ignore),
        num_calibration_samples=len(calib),
        max_seq_length=job["max_seq_len"],
        shuffle_calibration_samples=False,
    )
    dispatch_for_generation(model)
    return model, metrics.layer_cosines(model, held)


def save(model: Any, out_dir: Path) -> None:
    model.save_pretrained(out_dir, save_compressed=True)


def load_quantized(job: dict, device: str | None) -> Any:
    """The saved checkpoint, reloaded by transformers through compressed-tensors."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(job["out_dir"], dtype="auto", device_map=device)


def damage(out_dir: Path, kind: str) -> None:
    """Test seam: random packed weights (``packed``) or every group scale ×16 (``scales``)."""
    metrics.damage_checkpoint(out_dir, kind, "weight_packed", "weight_scale")
