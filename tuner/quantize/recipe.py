"""What to quantize and how: the recipe (scheme, group size, what stays 16-bit, the gate's restoration
rules) and the calibration texts it runs on (built-in, or the user's JSONL with a held-out slice)."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tuner.errors import UsageError
from tuner.quantize import cache
from tuner.quantize.text import BUILTIN_VERSION, jsonl_texts

SCHEMES = {"w4a16": 4}  # scheme name -> weight bits (activations stay 16-bit)


@dataclass(frozen=True)
class QuantizeRecipe:
    """What to quantize and how. ``ignore`` are module names (or ``re:`` patterns) left 16-bit;
    ``group_size`` None: chosen per model (tuner.quantize.groups)."""

    scheme: str = "w4a16"
    group_size: int | None = None
    symmetric: bool = False
    ignore: tuple[str, ...] = ("lm_head",)
    restore_below: float = 0.99  # per-layer output cosine under which a layer is restored to 16-bit
    max_restore_fraction: float = 0.25  # at most this share of the quantized layers is restored
    max_rounds: int = 3  # quantization rounds (the first + re-quantizations after restoring layers)
    max_seq_len: int = 512
    held_out: int = 16  # built-in held-out sequences for the gate
    seed: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise UsageError(f"unknown scheme {self.scheme!r}; supported: {', '.join(SCHEMES)}")
        if self.group_size is not None and (self.group_size <= 0 or self.group_size % 32):
            raise UsageError(f"group size {self.group_size} must be a positive multiple of 32 (e.g. 128)")
        if not 0.0 <= self.restore_below < 1.0:
            raise UsageError(f"restore_below {self.restore_below} must be in [0, 1)")
        if self.max_rounds < 1 or self.held_out < 1 or self.max_seq_len < 16:
            raise UsageError("max_rounds and held_out must be >= 1 and max_seq_len >= 16")

    def to_job(self) -> dict[str, Any]:
        return {**asdict(self), "ignore": list(self.ignore), "bits": SCHEMES[self.scheme]}


def calibration_texts(calib: str | None, samples: int, seed: int) -> tuple[list[str] | None, list[str], str]:
    """(calibration texts or None for built-in, held-out texts from the user's file, calibration hash)."""
    if calib is None:
        return None, [], BUILTIN_VERSION
    path = Path(calib)
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        texts = jsonl_texts(rows)
    except OSError as exc:
        raise UsageError(f"cannot read calibration file {calib}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(
            f"calibration file {calib}: {exc} (one JSON object per line with 'text' or 'messages')"
        ) from None
    if len(texts) < 2:
        raise UsageError(f"calibration file {calib} has {len(texts)} usable row(s); it needs at least 2")
    random.Random(seed).shuffle(texts)
    n_held = max(1, min(16, len(texts) // 8))  # a slice of the user's data joins the held-out set
    return texts[n_held:][:samples], texts[:n_held], cache.file_hash(path)
