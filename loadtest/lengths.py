"""Token-length distributions of a workload: fixed, uniform, normal, lognormal, empirical (a dataset).

Every distribution is clipped to ``[min, max]`` so a workload always has a longest request (the
tuner sizes ``max_model_len`` from it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtest.errors import WorkloadError

KINDS = ("fixed", "uniform", "normal", "lognormal", "empirical")
MAX_TOKENS = 1 << 24  # longer than any model's context: a length beyond it is a typo, not a workload


@dataclass(frozen=True)
class LengthDist:
    kind: str
    min: int
    max: int
    mean: float = 0.0  # normal: mean
    std: float = 0.0  # normal: standard deviation
    median: float = 0.0  # lognormal: median (= exp(mu))
    sigma: float = 0.0  # lognormal: standard deviation of log(length)
    values: tuple[int, ...] = ()  # empirical

    def sample(self, rng: random.Random) -> int:
        if self.kind == "fixed" or self.min == self.max:
            return self.max
        if self.kind == "uniform":
            return rng.randint(self.min, self.max)
        if self.kind == "normal":
            x = rng.gauss(self.mean, self.std)
        elif self.kind == "lognormal":
            x = rng.lognormvariate(math.log(self.median), self.sigma)
        else:
            x = rng.choice(self.values)
        return min(self.max, max(self.min, int(round(x))))

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.max}"
        if self.kind == "uniform":
            return f"uniform {self.min}..{self.max}"
        if self.kind == "normal":
            return f"normal {self.mean:g}±{self.std:g} in {self.min}..{self.max}"
        if self.kind == "lognormal":
            return f"lognormal median {self.median:g} sigma {self.sigma:g} in {self.min}..{self.max}"
        return f"empirical ({len(self.values)} values) in {self.min}..{self.max}"


def _num(where: str, d: dict[str, Any], key: str, *, integer: bool = False, positive: bool = True) -> Any:
    if key not in d:
        raise WorkloadError(f"{where}.{key}: missing (required for dist {d.get('dist')!r})")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or (integer and not isinstance(v, int)):
        raise WorkloadError(f"{where}.{key}: expected {'an integer' if integer else 'a number'}, got {v!r}")
    if positive and not v > 0:
        raise WorkloadError(f"{where}.{key}: must be > 0, got {v!r}")
    if not math.isfinite(v) or abs(v) > MAX_TOKENS:
        raise WorkloadError(f"{where}.{key}: must be a finite number up to {MAX_TOKENS}, got {v!r}")
    return v


def parse_length(where: str, raw: Any, base_dir: Path | None = None) -> LengthDist:
    """Parse ``512`` or ``{dist: normal, mean: 512, std: 64, min: 256, max: 768}``.

    ``where`` names the file and field for errors, e.g. ``"code.yaml: input_tokens"``.
    """
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 1 <= raw <= MAX_TOKENS:
            raise WorkloadError(f"{where}: must be ≥ 1 and ≤ {MAX_TOKENS} tokens, got {raw}")
        return LengthDist("fixed", raw, raw)
    if not isinstance(raw, dict):
        raise WorkloadError(f"{where}: expected an integer or a mapping with 'dist', got {raw!r}")
    kind = raw.get("dist", "fixed")
    if kind not in KINDS:
        raise WorkloadError(f"{where}.dist: unknown {kind!r}; use one of: {', '.join(KINDS)}")
    known = {"dist", "min", "max", "value", "mean", "std", "median", "sigma", "values", "path", "field"}
    extra = sorted(set(raw) - known)
    if extra:
        raise WorkloadError(f"{where}: unknown field(s) {', '.join(extra)}")
    if kind == "fixed":
        v = _num(where, raw, "value", integer=True)
        return LengthDist("fixed", v, v)
    values: tuple[int, ...] = ()
    lo_default: int | None
    hi_default: int | None
    if kind == "empirical":
        values = _empirical(where, raw, base_dir)
        lo_default, hi_default = min(values), max(values)
    elif kind == "uniform":
        lo_default = hi_default = None
    else:
        lo_default, hi_default = 1, None
    lo = raw.get("min", lo_default)
    hi = raw.get("max", hi_default)
    if hi is None:
        raise WorkloadError(f"{where}.max: missing (every length distribution needs a max)")
    if lo is None:
        raise WorkloadError(f"{where}.min: missing (required for dist {kind!r})")
    _num(where, {"dist": kind, "min": lo}, "min", integer=True)
    _num(where, {"dist": kind, "max": hi}, "max", integer=True)
    if lo > hi:
        raise WorkloadError(f"{where}: min {lo} is greater than max {hi}")
    if kind == "normal":
        return LengthDist(kind, lo, hi, mean=float(_num(where, raw, "mean")), std=float(_num(where, raw, "std")))
    if kind == "lognormal":
        return LengthDist(
            kind, lo, hi, median=float(_num(where, raw, "median")), sigma=float(_num(where, raw, "sigma"))
        )
    return LengthDist(kind, lo, hi, values=values)


def _empirical(where: str, raw: dict[str, Any], base_dir: Path | None) -> tuple[int, ...]:
    if "values" in raw:
        vals = raw["values"]
    elif "path" in raw:
        p = Path(raw["path"])
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        if not p.is_file():
            raise WorkloadError(f"{where}.path: no such file {str(p)!r}")
        field = raw.get("field")
        vals = []
        import json

        from loadtest.textfile import read_text

        for n, line in enumerate(read_text(p, WorkloadError, 1 << 30).splitlines(), 1):
            if not line.strip():
                continue
            try:
                vals.append(json.loads(line)[field] if field else int(line))
            except (ValueError, KeyError, TypeError) as e:
                raise WorkloadError(f"{where}.path: {p}:{n}: cannot read a length ({e})") from None
    else:
        raise WorkloadError(f"{where}: dist 'empirical' needs 'values' (a list) or 'path' (a file)")
    if not isinstance(vals, list) or not vals or not all(_length(v) for v in vals):
        raise WorkloadError(f"{where}.values: expected a non-empty list of whole numbers from 1 to {MAX_TOKENS}")
    return tuple(vals)


def _length(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_TOKENS
