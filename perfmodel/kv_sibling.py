"""A family that differs from a calibrated one by its KV cache dtype only (an fp8 cache beside the defaults' auto)
runs the same weights, the same host work and the same front end. Its first launch therefore fits one coefficient,
what a byte of KV cache costs decode attention to read, and keeps every other cost of its sibling: fitted alone on
one launch, the five coefficients trade off against each other, and one is determined by it. The fp8 kernels are
not the bytes-halved ones, so the read cost is fitted, not scaled (docs/perfmodel.md, "A KV-dtype family keeps its
sibling's costs but one").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from perfmodel.calibrate import loss, trials_pool
from perfmodel.costs import Costs
from perfmodel.family import Family
from perfmodel.observed import ObservedTrial
from perfmodel.rank import Calibration, trials_family

KV_READ_RANGE = (0.25, 32.0)  # the multiples of the sibling's cost per KV byte searched
KV_READ_GRID = 15  # first a scan of this many multiples, evenly in log units (the loss is not smooth in them)
KV_READ_TOLERANCE = 0.02  # then a bounded search between the best one's neighbours, to ~2 % in log units


def kv_siblings(family: Family, other: Family) -> bool:
    """Whether ``family`` and ``other`` differ by their KV cache dtype and nothing else."""
    return family != other and family.but_kv(other.kv_dtype) == other


def calibrate_kv_sibling(
    trials: Sequence[ObservedTrial], sibling: Calibration, *, workers: int | None = 1
) -> Calibration:
    """Calibrate the family of ``trials`` (all of one family, a KV-dtype sibling of ``sibling``'s) on them: the
    sibling's costs with the cost per KV byte read fitted (a scan in log units, then a bounded search around its
    best). The sibling's checks do not carry over."""
    from scipy.optimize import minimize_scalar  # lazily: only calibration needs SciPy

    family = trials_family(trials)
    if not kv_siblings(family, sibling.family):
        raise ValueError(f"{family} is not a KV-dtype sibling of {sibling.family}; calibrate it on its own")
    lo, hi = (math.log(x) for x in KV_READ_RANGE)
    grid = [lo + (hi - lo) * i / (KV_READ_GRID - 1) for i in range(KV_READ_GRID)]
    with trials_pool(trials, workers) as pool:

        def objective(log_multiple: float) -> float:
            return loss(_with_kv_read(sibling.costs, log_multiple), trials, pool)[0]

        scanned = [objective(x) for x in grid]
        best = min(range(KV_READ_GRID), key=lambda i: scanned[i])
        bounds = (grid[max(best - 1, 0)], grid[min(best + 1, KV_READ_GRID - 1)])
        found = minimize_scalar(objective, bounds=bounds, method="bounded", options={"xatol": KV_READ_TOLERANCE})
        x = float(found.x) if found.fun <= scanned[best] else grid[best]
        costs = _with_kv_read(sibling.costs, x)
        value = min(float(found.fun), scanned[best])
    return Calibration(family, costs, tuple(t.number for t in trials), value)


def kv_read_multiple(cal: Calibration, sibling: Calibration) -> float:
    """What ``cal``'s family pays per KV byte read, in multiples of ``sibling``'s."""
    return cal.costs.per_kv_byte_s / sibling.costs.per_kv_byte_s


def _with_kv_read(costs: Costs, log_multiple: float) -> Costs:
    return replace(costs, per_kv_byte_s=costs.per_kv_byte_s * math.exp(log_multiple))
