"""AutoAWQ backend of the quantization worker (DEPRECATED upstream; optional).

Runs under an interpreter with ``autoawq`` (``scripts/install-quantize.sh --autoawq``). AutoAWQ 0.2.9
is unmaintained: it quantizes dense models (it fails on transformers-5 MoE models) and has no CPU
inference. It writes ``quant_method: awq, version: gemm``, which vLLM loads (GPU: Marlin/AWQ kernels;
CPU: CPUWNA16). Asymmetric (zero-point) GEMM format only.

Three things AutoAWQ does not offer are added by wrapping its quantizer while it runs:
- per-layer restoration: its ``modules_to_not_convert`` matches names *relative to a decoder layer*
  (``mlp.down_proj`` would exclude every layer's) and its Llama scaling rules then fail on the missing
  inputs; the wrapper keeps restored layers in the scale search but skips their clipping and
  quantization by full module name. The saved config lists those full names, which vLLM matches;
- per-layer output cosine, measured just before packing on the calibration inputs AutoAWQ cached
  for that layer (already divided by the AWQ scales), between the smoothed+clipped 16-bit weight and
  its quantize-dequantize;
- evaluation without AWQ kernels: the saved checkpoint is dequantized (GEMM packing) into a float32
  copy of the original architecture.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from tuner.quantize import metrics

NAME = "autoawq"
EVAL_DTYPE = "float32"  # the dequantized checkpoint and the reference both run in float32
_CHUNK_TOKENS = 4096


def prepare() -> None:
    pass


@torch.no_grad()
def _cosine(quantizer: Any, linear: torch.nn.Linear, x: torch.Tensor) -> float:
    w = linear.weight.data.float()
    wq = quantizer.pseudo_quantize_tensor(w.clone())[0]
    bias = None if linear.bias is None else linear.bias.float()
    total, count = 0.0, 0
    for chunk in x.reshape(-1, x.shape[-1]).split(_CHUNK_TOKENS):
        chunk = chunk.to(w.device, torch.float32)
        cos = F.cosine_similarity(F.linear(chunk, wq, bias), F.linear(chunk, w, bias), dim=-1)
        total, count = total + float(cos.sum()), count + cos.numel()
    return total / max(1, count)


@contextlib.contextmanager
def _wrapped_quantizer(prefix_of: dict[int, str], skip: set[str], cosines: dict[str, float]) -> Iterator[None]:
    """Patch AwqQuantizer while it runs: restored layers are neither clipped nor quantized (they still
    take part in the AWQ scale search, which preserves their outputs), and every quantized layer's
    cosine is measured just before packing."""
    import awq.quantize.quantizer as q

    cls = q.AwqQuantizer
    originals = (cls._get_input_feat, cls._search_best_clip, cls._apply_quant)
    get_feat, search_clip, apply_quant = originals

    def keep(module: Any, named: dict) -> dict:
        prefix = prefix_of.get(id(module), "")
        return {n: m for n, m in named.items() if f"{prefix}.{n}" not in skip}

    def input_feat(self: Any, layer: Any, named: Any) -> Any:
        self._slotune_feat = get_feat(self, layer, named)
        return self._slotune_feat

    def clip_quantized_only(self: Any, layer: Any, named: dict, feat: Any) -> Any:
        return search_clip(self, layer, keep(layer, named), feat)

    def measure_then_quantize(self: Any, module: Any, named: dict) -> Any:
        prefix, feats = prefix_of.get(id(module), ""), getattr(self, "_slotune_feat", {})
        named = keep(module, named)
        for name, linear in named.items():
            if name in feats:
                cosines[f"{prefix}.{name}"] = _cosine(self, linear, feats[name])
        return apply_quant(self, module, named)

    cls._get_input_feat, cls._search_best_clip, cls._apply_quant = (  # type: ignore[method-assign]
        input_feat,
        clip_quantized_only,
        measure_then_quantize,
    )
    try:
        yield
    finally:
        cls._get_input_feat, cls._search_best_clip, cls._apply_quant = originals  # type: ignore[method-assign]


def quantize_once(
    job: dict, calib: list[torch.Tensor], held: list[torch.Tensor], ignore: list[str]
) -> tuple[Any, dict[str, float]]:
    """The AutoAWQ model (packed) and each quantized Linear's output cosine on the calibration inputs."""
    from awq import AutoAWQForCausalLM
    from transformers import AutoTokenizer

    recipe = job["recipe"]
    if recipe["symmetric"]:
        raise ValueError("the autoawq backend writes the zero-point GEMM format only (symmetric=False)")
    model = AutoAWQForCausalLM.from_pretrained(job["model_dir"])
    tokenizer = AutoTokenizer.from_pretrained(job["model_dir"])
    prefix_of = {id(m): n for n, m in model.model.named_modules()}
    skip = {n for n in ignore if n != "lm_head"}  # AutoAWQ never quantizes lm_head or embeddings
    config = {
        "zero_point": True,
        "q_group_size": recipe["group_size"],
        "w_bit": recipe["bits"],
        "version": "GEMM",
        "modules_to_not_convert": sorted(skip) or None,
    }
    total = sum(len(s) for s in calib)
    cosines: dict[str, float] = {}
    with _wrapped_quantizer(prefix_of, skip, cosines):
        model.quantize(
            tokenizer,
            quant_config=config,
            calib_data=[s.tolist() for s in calib],
            max_calib_samples=len(calib),
            max_calib_seq_len=min(job["max_seq_len"], total),
        )
    return model, cosines


def save(model: Any, out_dir: Path) -> None:
    model.save_quantized(str(out_dir))


def load_quantized(job: dict, device: str | None) -> Any:
    """The saved AWQ checkpoint dequantized into a float32 copy of the original architecture."""
    from awq.utils.packing_utils import dequantize_gemm
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    out = Path(job["out_dir"])
    cfg = json.loads((out / "config.json").read_text())
    qcfg = cfg["quantization_config"]
    state: dict[str, torch.Tensor] = {}
    for f in sorted(out.glob("*.safetensors")):
        state.update(load_file(f))
    dense = {}
    for key, value in state.items():
        if key.endswith(".qweight"):
            p = key[: -len(".qweight")]
            w = dequantize_gemm(value, state[f"{p}.qzeros"], state[f"{p}.scales"], qcfg["bits"], qcfg["group_size"])
            dense[f"{p}.weight"] = w.T.float()
        elif not key.endswith((".qzeros", ".scales")):
            dense[key] = value.float()
    model = AutoModelForCausalLM.from_pretrained(job["model_dir"], dtype=torch.float32)
    loaded = model.load_state_dict(dense, strict=False)
    missing = set(loaded.missing_keys) - ({"lm_head.weight"} if cfg.get("tie_word_embeddings") else set())
    if loaded.unexpected_keys or missing:
        raise RuntimeError(
            f"AWQ checkpoint {out} does not match the model: missing {sorted(missing)}, "
            f"unexpected {sorted(loaded.unexpected_keys)}"
        )
    return model.to(device) if device else model  # type: ignore[arg-type]


def damage(out_dir: Path, kind: str) -> None:
    """Test seam: random packed weights (``packed``) or every group scale ×16 (``scales``)."""
    metrics.damage_checkpoint(out_dir, kind, ".qweight", ".scales")
