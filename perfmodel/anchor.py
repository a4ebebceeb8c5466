"""The speed at which the model serves a measured run as it was measured: the factor on a calibration's step costs
(``Costs.slowed``) under which the model's mean TPOT (or another mean) over the run's load equals the measured one.

Why: a calibration is fitted on a study's short levels, and at a KV-bound edge a few per cent of step time decide
whether the cache fills; H200 run b's calibration made its winner's steps 30 % too long at its stated rate and
tipped it where its soaks held with the cache at 76 %. Set to the speed its soaks measured, the model reproduces
them, and "how much slower may a machine be" is then asked from the machine that measured, not from the
calibration's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from perfmodel.server import Server

if TYPE_CHECKING:
    from perfmodel.config import EngineConfig
    from perfmodel.costs import Costs
    from perfmodel.traffic import OpenLoad

# the bracket searched: a calibration more than twice off the machine it describes is not one to anchor
LOWEST, HIGHEST = 0.5, 2.0
STEPS = 12  # bisections of the log bracket: the factor to within 0.04 %


def mean_tpot_ms(engine: EngineConfig, costs: Costs, loads: Sequence[OpenLoad]) -> float | None:
    """The model's mean TPOT over every answered request of ``loads`` (loadtest's definition); None: none had two
    tokens."""
    samples = [v for load in loads for v in Server(engine, costs).run(load).samples("tpot")]
    return sum(samples) / len(samples) if samples else None


def mean_engine_itl_ms(engine: EngineConfig, costs: Costs, loads: Sequence[OpenLoad]) -> float | None:
    """The model's mean inter-token latency at the engine over ``loads``, as vLLM's /metrics time it."""
    values = [v for load in loads if (v := Server(engine, costs).run(load).engine_itl_ms) is not None]
    return sum(values) / len(values) if values else None


def anchor_speed(
    engine: EngineConfig,
    costs: Costs,
    loads: Sequence[OpenLoad],
    measured_ms: float,
    steps: int = STEPS,
    metric: Callable[[EngineConfig, Costs, Sequence[OpenLoad]], float | None] = mean_tpot_ms,
) -> float | None:
    """The factor f for which ``costs.slowed(f)`` gives ``measured_ms`` of ``metric`` (the mean TPOT unless told)
    on ``loads``; None where no factor in [0.5, 2] reaches it (the model's steps cannot be made to match) or the
    loads give no value. The metric grows with f (longer steps, and larger batches of them): a bisection finds it."""

    def value(f: float) -> float:
        got = metric(engine, costs.slowed(f), loads)
        return math.nan if got is None else got

    low, high = LOWEST, HIGHEST
    if not value(low) <= measured_ms <= value(high):
        return None
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if value(mid) < measured_ms:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)
