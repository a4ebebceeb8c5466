"""Engine families in ``tune --predict`` beyond the defaults' (issue #24): which configuration measures a family the
model has not calibrated, and the calibrations of the families measured so far.

A family's first launch is vLLM's defaults with only the family's own settings changed (KV dtype, weights,
speculative decoding, parallel layout): one setting from the measured defaults, so what it measures is the
family's effect. On H200 run f the search measured the fp8 family at the sample's member its KV reads scaled by
bytes ranked first, four settings off vLLM's defaults; it measured 52.822 req/s and the family was not launched
again, where the A30 grid had measured vLLM's defaults with an fp8 cache at 64.9 and its best point, one setting
further, at 65.9 (docs/perfmodel.md, "Unseen families").

A family whose steps the model describes (another KV dtype, weights or tensor parallelism) is then calibrated on
that launch, as the defaults' family was on theirs (another KV dtype: the defaults' costs with its KV read cost
fitted, perfmodel.kv_sibling), and its configurations are predicted and launched on the same terms. Speculative
decoding is measured only: the model has no draft-and-verify steps."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from perfmodel.family import Family, family_of
from perfmodel.rank import Calibration, Check, Prediction

if TYPE_CHECKING:
    from launch.config import ServeConfig

# the ServeConfig fields a family is made of (perfmodel.family.family_of) and that the search moves with it
FAMILY_FIELDS = (
    "model",
    "kv_cache_dtype",
    "tensor_parallel_size",
    "data_parallel_size",
    "speculative_method",
    "num_speculative_tokens",
    "speculative_model",
)
FAMILY_ATTR = "family_launch"  # user attr of a trial that launches vLLM's defaults with a family's settings
CALIBRATES_ATTR = "calibrates_family"  # user attr: an unpredicted launch measured in full, to calibrate its family
FAMILIES_ATTR = "perfmodel_family_calibrations"  # the other families' calibrations (Calibration.to_dict each)
Ranker = Callable[[Sequence["ServeConfig"]], list[Prediction]]


def family_settings(config: ServeConfig) -> dict[str, Any]:
    """What makes ``config``'s family, as FAMILY_ATTR stores it."""
    return {f: getattr(config, f) for f in FAMILY_FIELDS}


def family_launch(base: ServeConfig, member: ServeConfig) -> ServeConfig:
    """vLLM's defaults (``base``) with ``member``'s family settings and nothing else changed."""
    return replace(base, **family_settings(member))


def launched_family(base: ServeConfig, attrs: Mapping[str, Any]) -> ServeConfig | None:
    """The configuration a trial enqueued as a family's first launch runs (its user attrs), else None."""
    settings = attrs.get(FAMILY_ATTR)
    return replace(base, **settings) if settings else None


def modelled(family: Family) -> bool:
    """Whether one launch can calibrate ``family``: the model's steps describe it (no speculative decoding)."""
    return family.speculative == "off"


@dataclass(frozen=True)
class Calibrations:
    """The defaults' family's calibration and those of the families calibrated on their own launch since. The
    demonstrated error pools every family's checks: one method, one error figure."""

    main: Calibration
    others: tuple[Calibration, ...] = ()

    def of(self, family: Family) -> Calibration | None:
        return next((c for c in (self.main, *self.others) if c.family == family), None)

    def with_cal(self, cal: Calibration) -> Calibrations:
        """These calibrations with ``cal`` in place of its family's (or added)."""
        if cal.family == self.main.family:
            return replace(self, main=cal)
        others = tuple(c for c in self.others if c.family != cal.family)
        return replace(self, others=(*others, cal))

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(c for cal in (self.main, *self.others) for c in cal.checks)

    @property
    def demonstrated_error(self) -> float | None:
        """Median |predicted − measured| / measured over every family's checks; None before any."""
        checks = self.checks
        return statistics.median(abs(c.rel_error) for c in checks) if checks else None

    def others_to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.others]

    @classmethod
    def of_stored(cls, main: Calibration, others: Sequence[dict[str, Any]]) -> Calibrations:
        return cls(main, tuple(Calibration.from_dict(d) for d in others))


def ranker(rank: Callable[[Sequence[ServeConfig], Calibration], list[Prediction]], cals: Calibrations) -> Ranker:
    """Rank configurations each by its own family's calibration (the rest by the defaults', which says which it
    cannot predict): predicted ones best first, every one carrying the pooled demonstrated error, then the rest in
    the defaults' ranking's order."""

    def ranked(configs: Sequence[ServeConfig]) -> list[Prediction]:
        groups: dict[Family, list[ServeConfig]] = {}
        for c in configs:
            fam = family_of(c)
            groups.setdefault(fam if any(o.family == fam for o in cals.others) else cals.main.family, []).append(c)
        out = []
        for fam, members in groups.items():
            out += rank(members, cals.of(fam) or cals.main)
        error = cals.demonstrated_error
        predicted = [replace(p, demonstrated_error=error) for p in out if p.capacity_req_s is not None]
        predicted.sort(key=lambda p: -(p.capacity_req_s or 0.0))
        return [*predicted, *(p for p in out if p.capacity_req_s is None)]

    return ranked
