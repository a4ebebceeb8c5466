"""ModelSpec: a model's shape (``tuner/model/shape.py``, read from ``config.json`` by ``tuner/model/config.py``)
and the sizes that follow from it: weight bytes come from the shapes (``tensors`` in
``tuner/model/weights.py`` enumerates every tensor vLLM loads), never from file sizes.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from loadtest.textfile import read_json
from tuner.errors import ModelSpecError
from tuner.model.config import parse
from tuner.model.shape import ModelShape
from tuner.model.weights import is_quantized as _is_quantized
from tuner.model.weights import tensor_bytes as _tensor_bytes
from tuner.model.weights import tensors as _tensors


class ModelSpec(ModelShape):
    """The budget-relevant shape of one model and its sizes. Built by ``from_dir`` / ``from_config``."""

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dir(cls, path: str | Path) -> ModelSpec:
        path = Path(path)
        cfg_path = path / "config.json" if path.is_dir() else path
        if not cfg_path.is_file():
            raise ModelSpecError(
                f"{cfg_path}: no config.json; --model must be a model directory "
                "(with config.json) or the config.json itself"
            )
        cfg = read_json(cfg_path, ModelSpecError)
        return cls.from_config(cfg, source=str(cfg_path))

    @classmethod
    def from_config(cls, cfg: dict[str, Any], source: str = "<config>") -> ModelSpec:
        shape = parse(cfg, source)
        return cls(**{f.name: getattr(shape, f.name) for f in fields(shape)})

    # ---- sizes from the weights -----------------------------------------------------------------
    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights vLLM loads, from the shapes (packed 4-bit + scales + zeros)."""
        return sum(_tensor_bytes(self, t) for t in _tensors(self))

    @property
    def quantized_weight_bytes(self) -> int:
        """Bytes of the quantized tensors alone (packed weights, scales, zeros); 0 for a 16-bit model."""
        return sum(_tensor_bytes(self, t) for t in _tensors(self) if _is_quantized(self, t))

    @property
    def num_params(self) -> int:
        """Logical parameters (unpacked), embeddings included once when tied."""
        return sum(t.numel for t in _tensors(self) if t.param)

    def decode_weight_bytes(self, batch: int = 1) -> int:
        """Weight bytes one decode step reads: everything but the embedding table (a row lookup), with
        each MoE expert counted by the chance that at least one of ``batch`` tokens is routed to it."""
        total = 0
        for t in _tensors(self):
            if t.name == "model.embed_tokens" and not self.tie_word_embeddings:
                continue
            share = 1.0 if t.active_fraction >= 1.0 else 1.0 - (1.0 - t.active_fraction) ** max(1, batch)
            total += int(_tensor_bytes(self, t) * share)
        return total

    @property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: only the routed experts a token uses)."""
        return int(sum(t.numel * t.active_fraction for t in _tensors(self) if t.param))
