"""perfmodel as ``tune --predict`` uses it (issue #24): what a measured trial teaches the model, one engine
family's calibration, and sampled configurations budgeted and ranked by predicted steady-state capacity.

The tuner's levels (``tuner.trial.capacity`` since #22) are not the short levels perfmodel was validated on: each
level has its own load seed (``tuner.trial.measuring.level_seed``), so no level repeats another's prompts, and it
goes on sending until it has lasted ``level_e2e_multiple`` request lifetimes. So each level is replayed as a
trial of its own (a fresh simulated server, its own prompts), with the requests its rate sent over its length.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from perfmodel.family import family_of
from perfmodel.kv_sibling import calibrate_kv_sibling, kv_siblings
from perfmodel.observed import ObservedTrial, observe
from perfmodel.protocol import ShortLevelSearch
from perfmodel.rank import Calibration, Candidate, Prediction, calibrate, rank
from perfmodel.traffic import Demand
from tuner.budget.kv_budget import estimate_budget
from tuner.search.departures import Departures, departures, no_departures, with_vllms_defaults
from tuner.search.predict_demand import demand_of
from tuner.search.space import suggest_config
from tuner.trial.capacity import MIN_LEVEL_FLOOR, MeasurePlan
from tuner.trial.context import spec_of
from tuner.trial.level import Level
from tuner.trial.measuring import level_seed
from tuner.trial.result import TrialResult

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from tuner.search.space import SpaceContext
    from tuner.trial.context import TrialContext

FIRST_EVALUATIONS = 300  # the defaults' fit (perfmodel.rank.calibrate's own default: 20-60 s on 2 cores)
REFIT_EVALUATIONS = 80  # a refit after a launch starts from the previous costs (bench/perfmodel_sequential.py)


@dataclass(frozen=True)
class Model:
    """What the guided search asks of perfmodel (tests inject a fake): ``calibrate(measured, previous)``
    fits the family of ``measured[0]`` (vLLM's defaults) to every measured trial, from ``previous``, that family's
    calibration before the latest launch; for a family's first launch ``previous`` may be the calibration of a
    family it differs from by KV dtype only, whose costs it keeps but the KV reads' (perfmodel.kv_sibling);
    ``rank(configs, cal)`` predicts the configurations whose KV budget is feasible, best first, unpredictable ones
    last; ``departures(config)``: how many engine settings it moves from vLLM's defaults (tuner.search.departures)."""

    calibrate: Callable[[Sequence[TrialResult], Calibration | None], Calibration]
    rank: Callable[[Sequence[ServeConfig], Calibration], list[Prediction]]
    departures: Departures = no_departures


def short_levels(plan: MeasurePlan) -> ShortLevelSearch:
    """The plan's probe and level sizes in perfmodel's terms (``observe`` counts a probe's requests by it)."""
    return ShortLevelSearch(
        probe_requests=plan.probe_requests,
        probe_concurrency=plan.probe_concurrency,
        level_duration_s=plan.level_duration_s,
        min_level_requests=plan.min_level_requests,
        max_level_requests=plan.max_level_requests,
        low_rate_fraction=plan.low_rate_fraction,
        high_rate_factor=plan.high_rate_factor,
        bisection_steps=plan.bisection_steps,
        max_expansions=plan.max_expansions,
        max_level_stretch=plan.max_level_stretch,
    )


def _sent(level: Level, planned: int, plan: MeasurePlan) -> int:
    """About how many requests a rate level sent: its rate over its length, less the last request's lifetime
    (the level lasts at least ``level_e2e_multiple`` of them); the plan's count when the length is unknown."""
    duration, rate = level.duration_s, level.rate
    if not duration or not rate:
        return planned
    tail = 1.0 / plan.level_e2e_multiple if plan.level_e2e_multiple else 0.0
    return max(MIN_LEVEL_FLOOR, round(rate * duration * (1.0 - tail)))


def observed_levels(
    result: TrialResult, demand: Demand, plan: MeasurePlan, *, engine_ttft: str = "off"
) -> list[ObservedTrial]:
    """``result``'s levels as perfmodel trials, one per level, each with the seed it was measured under; the
    best level's percentiles go with its own. A level passed when it met the SLOs and was steady.
    ``engine_ttft``: each level keeps vLLM's engine-side mean TTFT (``perfmodel.observed.observe``)."""
    whole = observe(result, demand, short_levels(plan), plan.seed, engine_ttft=engine_ttft)
    out = []
    for k, (lv, raw) in enumerate(zip(whole.levels, result.levels, strict=True)):
        n = lv.requests if lv.kind == "probe" else _sent(raw, lv.requests, plan)
        passed = lv.slo_met and raw.steady_holds
        best = lv.kind == "rate" and lv.rate == result.best_rate
        out.append(
            replace(
                whole,
                seed=level_seed(plan.seed, result.number, k),
                levels=(replace(lv, requests=n, slo_met=passed),),
                best_rate=result.best_rate if best else None,
                best=whole.best if best else None,
            )
        )
    return out


def sample_space(sctx: SpaceContext, n: int, seed: int) -> dict[ServeConfig, dict[str, Any]]:
    """Up to ``n`` distinct configurations drawn at random from the search space (tuner.search.space, as the study's
    sampler draws them), each with the Optuna params that reproduce it."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    scratch = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out: dict[ServeConfig, dict[str, Any]] = {}
    for _ in range(n):
        trial = scratch.ask()
        out.setdefault(suggest_config(trial, sctx), dict(trial.params))
    return out


def candidate(config: ServeConfig, ctx: TrialContext) -> Candidate | None:
    """``config`` with the KV blocks ``tuner.budget.kv_budget`` predicts, as the trial would budget it; None when the
    budget says it cannot launch (dropped, as a trial would be pruned before launch)."""
    budget = estimate_budget(spec_of(config, ctx), ctx.gpu, config, vllm_version=ctx.vllm_version, env=ctx.env)
    if not budget.feasible:
        return None
    try:
        return Candidate.of(config, budget)
    except ValueError:  # limits vLLM refuses (max_num_batched_tokens < max_num_seqs)
        return None


def perf_model(ctx: TrialContext, *, engine_ttft: str = "off") -> Model:
    """The real model for a study measured with ``ctx`` (its workload, SLOs, plan, model and GPU). ``engine_ttft``:
    calibrations also fit vLLM's engine-side TTFT of levels ("all" or "unqueued": ``perfmodel.observed.observe``;
    tried 2026-12-08, not landed: docs/perfmodel.md)."""
    demand = demand_of(ctx)

    def fit(measured: Sequence[TrialResult], previous: Calibration | None) -> Calibration:
        observed = [o for r in measured for o in observed_levels(r, demand, ctx.plan, engine_ttft=engine_ttft)]
        if previous is not None and kv_siblings(family_of(measured[0].config), previous.family):
            return calibrate_kv_sibling(observed, previous, workers=None)
        evaluations = FIRST_EVALUATIONS if previous is None else REFIT_EVALUATIONS
        # the steps run at the speed of the device serving (an emulated A30 runs at the H200's); the KV blocks
        # come from the emulated memory (candidate)
        speed = ctx.speed_gpu
        return calibrate(observed, ctx.spec, speed, max_evaluations=evaluations, previous=previous, workers=None)

    def ranked(configs: Sequence[ServeConfig], cal: Calibration) -> list[Prediction]:
        found = [candidate(c, ctx) for c in configs]
        return rank([c for c in found if c is not None], cal, demand, workers=None)

    return Model(fit, ranked, departures_of(ctx))


def departures_of(ctx: TrialContext) -> Departures:
    """``departures`` on the engines the KV budget resolves for ``ctx`` (vLLM's defaults for its GPU and model);
    a configuration whose engine, or whose defaults' engine, cannot launch counts 0 (it is never launched)."""

    @functools.lru_cache(maxsize=4096)
    def moved(config: ServeConfig) -> int:
        mine, vllms = candidate(config, ctx), candidate(with_vllms_defaults(config), ctx)
        return 0 if mine is None or vllms is None else departures(config, mine.engine, vllms.engine)

    return moved
