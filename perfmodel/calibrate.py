"""Fit an engine family's costs to what a measured trial recorded anyway: each level it ran (probe
throughput and p95s; each rate level's outcome, p95s and throughput) and the percentiles of its best level.

The trial's levels are replayed on the model exactly as they ran (same order, same requests, same seed, one
server so the prefix cache carries over), and the fitted coefficients (``costs.FITTED``) minimise a robust
sum over levels of log-ratio residuals: p95 TTFT, p95 TPOT and throughput of every level that met its SLO
and of the probe, p50s of the best level, vLLM's own mean TTFT at the engine where the level kept it (queue +
prefill: what the client's percentiles cannot separate from the front end and the client), and, for a level that
missed, how far the model's level is from missing too. Nelder–Mead over log-coefficients, from a start read off
the measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from dataclasses import dataclass

from perfmodel.capacity import replay_levels
from perfmodel.costs import Costs
from perfmodel.observed import ObservedTrial
from perfmodel.outcome import LevelOutcome
from perfmodel.pool import process_pool, worker_count

HUBER = 0.3  # log-ratio beyond which a residual counts linearly (one level's outlier must not rule the fit)


@dataclass(frozen=True)
class Prior:
    """A belief about one fitted coefficient: log-normal around ``center`` with ``sigma`` in log units."""

    name: str
    center: float
    sigma: float

    def penalty(self, costs: Costs) -> float:
        return (math.log(getattr(costs, self.name) / self.center) / self.sigma) ** 2


@dataclass(frozen=True)
class Fit:
    costs: Costs
    loss: float  # the data's robust loss plus the priors' penalties
    residuals: tuple[float, ...]  # log(model / measured) of the fitted quantities, at the optimum
    evaluations: int


def residuals(trial: ObservedTrial, outcomes: list[LevelOutcome]) -> list[float]:
    """log(model / measured) per quantity; for a level that missed its SLO but the model's met it, how far
    the model's level is from missing (0 when it misses too)."""
    out: list[float] = []
    for lv, sim in zip(trial.levels, outcomes, strict=True):
        if lv.kind == "probe" or lv.slo_met:
            out.append(_log_ratio(sim.throughput_req_s, lv.throughput_req_s))
            out.append(_log_ratio(sim.value("ttft", 95), lv.ttft_p95_ms))
            out.append(_log_ratio(sim.value("tpot", 95), lv.tpot_p95_ms))
            if lv.engine_ttft_ms:
                out.append(_log_ratio(sim.engine_ttft_ms, lv.engine_ttft_ms))
            if lv.engine_itl_ms:
                out.append(_log_ratio(sim.engine_itl_ms, lv.engine_itl_ms))
        else:
            excess = max((sim.slo_value(s) or math.inf) / s.limit_ms for s in trial.demand.slos)
            out.append(min(0.0, math.log(excess)) if excess > 0 else -5.0)
    best = trial.best
    if best is not None and trial.best_rate is not None:
        sim = next(
            (o for lv, o in zip(trial.levels, outcomes, strict=True) if lv.rate == trial.best_rate), outcomes[-1]
        )
        for metric, dist in (("ttft", best.ttft_ms), ("tpot", best.tpot_ms), ("e2e", best.e2e_ms)):
            out.append(_log_ratio(sim.value(metric, 50), dist.p50))
    return out


def _log_ratio(model: float | None, measured: float | None) -> float:
    if measured is None or measured <= 0:
        return 0.0
    if model is None or model <= 0:
        return -5.0
    return math.log(model / measured)


def _huber(r: float) -> float:
    a = abs(r)
    return a * a if a <= HUBER else HUBER * (2 * a - HUBER)


_HELD: tuple[ObservedTrial, ...] = ()  # a pool worker's copy of the trials being fitted (sent once, not per call)


def _hold(trials: tuple[ObservedTrial, ...]) -> None:
    global _HELD
    _HELD = trials


def _held_residuals(task: tuple[int, Costs]) -> list[float]:
    index, costs = task
    return residuals(_HELD[index], replay_levels(_HELD[index], costs))


def loss(costs: Costs, trials: Sequence[ObservedTrial], pool: Executor | None = None) -> tuple[float, list[float]]:
    """The robust loss and the residuals, trial by trial in order; with ``pool`` (whose workers hold
    ``trials``) the trials are replayed there, one task each."""
    if pool is None:
        parts = [residuals(trial, replay_levels(trial, costs)) for trial in trials]
    else:
        parts = list(pool.map(_held_residuals, [(i, costs) for i in range(len(trials))]))
    res = [r for part in parts for r in part]
    return sum(_huber(r) for r in res), res


def initial_costs(trial: ObservedTrial, base: Costs) -> Costs:
    """A start for the fit from the measurements: a step at low load lasts about the lowest level's p95
    TPOT; the probe's p95 TPOT at its concurrency gives the per-sequence cost; the front end ~1/3 of a step."""
    rates = [lv for lv in trial.levels if lv.kind == "rate" and lv.tpot_p95_ms]
    probe = next((lv for lv in trial.levels if lv.kind == "probe" and lv.tpot_p95_ms), None)
    step = 0.8e-3 * (min(rates, key=lambda lv: lv.rate or 0.0).tpot_p95_ms or 10.0) if rates else 5e-3
    per_seq = step / 100
    if probe is not None and probe.concurrency and probe.tpot_p95_ms:
        per_seq = 1e-3 * probe.tpot_p95_ms / probe.concurrency
    return base.with_fitted((step, base.per_prefill_token_s, per_seq, step / 3, per_seq / 3))


def fit(
    trials: Sequence[ObservedTrial],
    base: Costs,
    *,
    max_evaluations: int = 400,
    warm: bool = False,
    priors: Sequence[Prior] = (),
    workers: int | None = 1,
) -> Fit:
    """Fit ``base``'s FITTED coefficients to ``trials`` of one engine family (the others stay as given); the
    start is read off the first (the defaults, usually), or with ``warm`` is ``base`` itself (a refit after
    another launch starts from the previous calibration). Nelder–Mead, restarted once from where it stopped
    (a fresh simplex gets it out of a collapsed one), within ``max_evaluations`` in all. Each evaluation
    replays the trials over ``workers`` processes (None: every usable core; the same fit as one)."""
    from scipy.optimize import minimize  # lazily: only calibration needs SciPy

    start = base if warm else initial_costs(trials[0], base)
    count = 0
    with trials_pool(trials, workers) as pool:

        def objective(logs: list[float]) -> float:
            nonlocal count
            count += 1
            costs = start.with_fitted([math.exp(x) for x in logs])
            return loss(costs, trials, pool)[0] + sum(p.penalty(costs) for p in priors)

        x = [math.log(v) for v in start.fitted()]
        for factor, share in ((1.5 if warm else 3.0, 2 / 3), (1.5, 1.0)):
            budget = round(max_evaluations * share) - count
            if budget <= len(x) + 1:
                break
            options = {"maxfev": budget, "xatol": 0.02, "fatol": 1e-3, "initial_simplex": _simplex(x, factor)}
            x = list(minimize(objective, x, method="Nelder-Mead", options=options).x)
        costs = start.with_fitted([math.exp(v) for v in x])
        value, res_list = loss(costs, trials, pool)
    return Fit(costs, value + sum(p.penalty(costs) for p in priors), tuple(res_list), count)


def trials_pool(trials: Sequence[ObservedTrial], workers: int | None) -> AbstractContextManager[Executor | None]:
    """A context of processes that hold ``trials`` (for ``loss``'s ``pool``), or of None where one process does."""
    return process_pool(worker_count(workers, len(trials)), _hold, (tuple(trials),))


def _simplex(x0: list[float], factor: float) -> list[list[float]]:
    """The first simplex: each coefficient × ``factor`` in turn (wide when the start is a rough guess)."""
    out = [list(x0)]
    for i in range(len(x0)):
        x = list(x0)
        x[i] += math.log(factor)
        out.append(x)
    return out
