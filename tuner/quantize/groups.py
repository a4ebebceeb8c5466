"""The quantization group size of a model: the largest of 128, 64, 32 that divides the input width of every
Linear layer that is quantized (pure; from config.json through ModelSpec).

A group of G weights shares one scale and zero point along a layer's input features, so G must divide
them: llm-compressor refuses group 128 for SmolLM2-135M (hidden size 576 = 4.5 × 128) and the worker died
with that ValueError. Chosen per model, the group is 128 where it fits (the usual 4-bit recipe), else 64,
else 32. A ``--group-size`` the user gives wins; layers whose width it does not divide (or that not even 32
divides) stay 16-bit and are listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuner.model.spec import ModelSpec
from tuner.model.weights import tensors

GROUP_SIZES = (128, 64, 32)  # preferred first


@dataclass(frozen=True)
class GroupChoice:
    group_size: int
    requested: bool  # True: the user's --group-size; False: chosen per model
    widths: dict[str, int]  # layer kind ("model.layers.N.mlp.down_proj") -> input features
    misfits: tuple[str, ...]  # kinds whose width the group does not divide: kept 16-bit

    def ignore_patterns(self) -> tuple[str, ...]:
        """llm-compressor ``ignore`` entries that keep the misfit layers 16-bit."""
        return tuple("re:.*" + re.escape(kind).replace("N", r"\d+") + "$" for kind in self.misfits)

    def line(self) -> str:
        """One line for the user: the group size and why."""
        how = "--group-size" if self.requested else "chosen per model: the largest of 128/64/32 dividing every layer"
        text = f"group size {self.group_size} ({how})"
        larger = [g for g in GROUP_SIZES if g > self.group_size]
        if not self.requested and larger:
            odd = sorted({w for w in self.widths.values() if w % larger[-1]})
            text += f"; {larger[-1]} does not divide input width(s) {', '.join(map(str, odd))}"
        if self.misfits:
            kept = ", ".join(f"{k.rsplit('.', 1)[-1]} ({self.widths[k]})" for k in self.misfits)
            text += f"; kept 16-bit, their input width is no multiple of {self.group_size}: {kept}"
        return text


def linear_widths(spec: ModelSpec, ignore: tuple[str, ...] = ("lm_head",)) -> dict[str, int]:
    """Input features of each kind of Linear layer that would be quantized (layer indices as ``N``)."""
    out: dict[str, int] = {}
    for t in tensors(spec):
        if t.is_linear and t.name not in ignore:
            out[re.sub(r"\.\d+\.", ".N.", t.name)] = t.cols
    return out


def choose_group_size(spec: ModelSpec, requested: int | None = None) -> GroupChoice:
    """``requested`` when given, else the largest of GROUP_SIZES dividing every quantized layer's width
    (else the smallest, with the layers it does not divide kept 16-bit)."""
    widths = linear_widths(spec)
    if requested is not None:
        group = requested
    else:
        group = next((g for g in GROUP_SIZES if all(w % g == 0 for w in widths.values())), GROUP_SIZES[-1])
    misfits = tuple(sorted(k for k, w in widths.items() if w % group))
    return GroupChoice(group, requested is not None, widths, misfits)
