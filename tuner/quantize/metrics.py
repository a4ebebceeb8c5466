"""Quality measurements of a quantized model against its 16-bit original (torch only; worker side).

- ``reference_logprobs``: the 16-bit model's next-token log-probabilities on the held-out sequences.
- ``compare_logprobs``: NLL of both models (so perplexity), KL(16-bit ‖ quantized) and top-1 agreement,
  all averaged per predicted token.
- ``layer_cosines``: for every fake-quantized Linear of a model that llm-compressor has just calibrated
  (weights still 16-bit, quantize-dequantize applied in ``forward``), the mean per-token cosine
  similarity between the layer's quantized output and the output of its own 16-bit weight on the same
  input. This isolates each layer's own quantization error (AWQ smoothing included, since both sides
  use the smoothed weight), which is exactly what restoring that layer to 16-bit removes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

# full-precision reference log-probs are kept while they fit in this many bytes; beyond it float16
_REFERENCE_FP32_BYTES = 1 << 30


def _device_of(model: Any) -> torch.device:
    emb = model.get_input_embeddings()
    dev = emb.weight.device
    return torch.device("cpu") if dev.type == "meta" else dev


@torch.no_grad()
def _logprobs(model: Any, ids: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=ids.to(_device_of(model))[None, :])
    return out.logits[0].float().log_softmax(-1).cpu()


@torch.no_grad()
def reference_logprobs(model: Any, sequences: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Log-probabilities ``[T, vocab]`` per sequence, kept on the CPU (float16 when they are large)."""
    vocab = int(model.get_output_embeddings().weight.shape[0])
    total = sum(len(s) for s in sequences) * vocab * 4
    dtype = torch.float32 if total <= _REFERENCE_FP32_BYTES else torch.float16
    return [_logprobs(model, ids).to(dtype) for ids in sequences]


@torch.no_grad()
def compare_logprobs(
    model: Any, sequences: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]
) -> dict[str, float]:
    """NLL/perplexity of reference and ``model``, KL(reference ‖ model) and top-1 agreement."""
    nll_ref = nll_q = kl = agree = 0.0
    n_pred = n_pos = 0
    for ids, ref in zip(sequences, reference, strict=True):
        ref = ref.float()
        lq = _logprobs(model, ids)
        target = ids[1:, None].cpu()
        nll_ref -= float(ref[:-1].gather(-1, target).sum())
        nll_q -= float(lq[:-1].gather(-1, target).sum())
        n_pred += len(ids) - 1
        kl += float((ref.exp() * (ref - lq)).sum())
        agree += float((ref.argmax(-1) == lq.argmax(-1)).sum())
        n_pos += len(ids)
    nll_base, nll_quant = nll_ref / n_pred, nll_q / n_pred
    return {
        "nll_base": nll_base,
        "nll_quant": nll_quant,
        "nll_delta": nll_quant - nll_base,
        "ppl_base": math.exp(nll_base),
        "ppl_quant": math.exp(nll_quant),
        "kl_divergence": kl / n_pos,
        "top1_agreement": agree / n_pos,
        "tokens": n_pos,
    }


def quantized_linears(model: Any) -> dict[str, torch.nn.Module]:
    """Linear modules that carry a weight quantization scheme (after llm-compressor calibration)."""
    out: dict[str, torch.nn.Module] = {}
    for name, module in model.named_modules():
        scheme: Any = getattr(module, "quantization_scheme", None)
        if isinstance(module, torch.nn.Linear) and scheme is not None and scheme.weights is not None:
            out[name] = module
    return out


@torch.no_grad()
def layer_cosines(model: Any, sequences: Sequence[torch.Tensor]) -> dict[str, float]:
    """Mean per-token cosine similarity of each fake-quantized Linear's output vs its 16-bit output."""
    layers = quantized_linears(model)
    sums = dict.fromkeys(layers, 0.0)
    counts = dict.fromkeys(layers, 0)

    def hook(name: str):  # noqa: ANN202 - a forward hook
        def record(module: torch.nn.Linear, args: tuple, output: torch.Tensor) -> None:
            x = args[0]
            exact = F.linear(x, module.weight.to(x.dtype), None if module.bias is None else module.bias)
            cos = F.cosine_similarity(output.float().flatten(0, -2), exact.float().flatten(0, -2), dim=-1)
            sums[name] += float(cos.sum())
            counts[name] += int(cos.numel())

        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in layers.items()]
    try:
        for ids in sequences:
            model(input_ids=ids.to(_device_of(model))[None, :])
    finally:
        for h in handles:
            h.remove()
    return {n: sums[n] / counts[n] for n in layers if counts[n]}


DAMAGES = ("packed", "scales", "flipped-scales", "zeroed-layer")


def damage_checkpoint(out_dir: Any, kind: str, packed_suffix: str, scale_suffix: str) -> None:
    """Test seam shared by both backends: random packed weights (``packed``), every group scale ×16
    (``scales``) or negated (``flipped-scales``), or every scale of the middle decoder layer zeroed
    (``zeroed-layer``: its Linears output nothing) in the saved safetensors; the backends differ only in
    the tensor-name suffixes."""
    import re

    from safetensors.torch import load_file, save_file

    gen = torch.Generator().manual_seed(0)
    files = sorted(out_dir.glob("*.safetensors"))
    layers = {int(m.group(1)) for f in files for n in load_file(f) if (m := re.search(r"\.layers\.(\d+)\.", n))}
    middle = f".layers.{sorted(layers)[len(layers) // 2]}." if layers else None
    for f in files:
        tensors = load_file(f)
        for name, t in tensors.items():
            if kind == "packed" and name.endswith(packed_suffix):
                tensors[name] = torch.randint(-(2**31), 2**31 - 1, t.shape, generator=gen, dtype=t.dtype)
            elif kind == "scales" and name.endswith(scale_suffix):
                tensors[name] = t * 16
            elif kind == "flipped-scales" and name.endswith(scale_suffix):
                tensors[name] = -t
            elif kind == "zeroed-layer" and name.endswith(scale_suffix) and middle and middle in name:
                tensors[name] = torch.zeros_like(t)
        save_file(tensors, f, metadata={"format": "pt"})
