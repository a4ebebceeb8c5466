"""Measuring a running server: the capacity search (tuner.trial.capacity) driven by real load levels
(loadtest.runner), each level with its own seed, and the rule that stops a hopeless trial after its probe.

``measure_capacity`` is the default ``tuner.trial.context.Measure``; a test injects its own through
``TrialContext.measure``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from launch.config import ServeConfig
from loadtest.report import LoadReport
from loadtest.runner import LoadSpec, run_load
from tuner.budget.vllm_defaults import effective
from tuner.trial.capacity import CapacityResult, MeasurePlan, capacity_search
from tuner.trial.context import TrialContext, load_spec
from tuner.trial.level import Level

# A trial is PRUNED after its saturation probe when the probe's throughput x this is below the best capacity
# so far and the server runs no more sequences at once than the probe sends (the probe then keeps it full,
# so its throughput bounds what Poisson load can complete). Why 3: docs/how-it-works.md (the hopeless rule).
HOPELESS_FACTOR = 3.0

# level_seed's strides: two primes, so no two (trial, level) pairs share a seed below a million levels a trial
TRIAL_SEED_STRIDE = 1_000_003
LEVEL_SEED_STRIDE = 7919


def level_seed(seed: int, trial: int, level: int) -> int:
    """The prompts' and arrivals' seed of one level: distinct per level of a trial, so that no level re-sends
    an earlier level's prompts and is served from vLLM's prefix cache (docs/certification.md)."""
    return seed + TRIAL_SEED_STRIDE * trial + LEVEL_SEED_STRIDE * (level + 1)


def _max_num_seqs(config: ServeConfig, ctx: TrialContext) -> int:
    return effective(config, ctx.gpu, ctx.vllm_version).max_num_seqs


def running_capacity(config: ServeConfig, ctx: TrialContext, kv_cache_tokens: int | None) -> int:
    """How many of the workload's longest requests the server runs at once: its max_num_seqs, or fewer when
    its KV cache (``kv_cache_tokens``, read back from vLLM) holds fewer of them."""
    seqs = _max_num_seqs(config, ctx)
    if not kv_cache_tokens or ctx.workload is None:
        return seqs
    longest = ctx.workload.max_input_tokens + (ctx.output_tokens or ctx.workload.max_output_tokens)
    return max(1, min(seqs, kv_cache_tokens // max(1, longest)))


def hopeless_check(
    config: ServeConfig,
    ctx: TrialContext,
    is_baseline: bool,
    running: int | None = None,
    probe_concurrency: int | None = None,
) -> Callable[[float], str | None] | None:
    """What decides, from the saturation probe, that ``config`` cannot win (see HOPELESS_FACTOR); None when
    the probe cannot tell (the baseline is always measured in full; more sequences at once, ``running``
    (default: max_num_seqs), than the probe sends (default: the plan's probe concurrency))."""
    if is_baseline:
        return None
    seqs = _max_num_seqs(config, ctx)
    if (running or seqs) > (probe_concurrency or ctx.plan.probe_concurrency):
        return None

    def check(saturation: float) -> str | None:
        best = ctx.best_capacity()
        if best is None or saturation * HOPELESS_FACTOR >= best:
            return None
        fit = f" ({running} of the longest requests fit its KV cache)" if running and running < seqs else ""
        return (
            f"hopeless: the saturation probe completed {saturation:.2f} req/s with max_num_seqs {seqs}{fit}, under "
            f"1/{HOPELESS_FACTOR:g} of the best capacity so far ({best:.2f} req/s); not measured further"
        )

    return check


def rate_level(plan: MeasurePlan, rate: float, n: int, may_abandon: bool) -> dict[str, Any]:
    """A rate level's load options: ``n`` requests at least, steady-state ones sent for ``level_e2e_multiple``
    request lifetimes up to ``level_max_s``, past that for JUDGED_LIFETIMES up to ``level_stretch`` times it."""
    level: dict[str, Any] = dict(
        rate=rate, requests=n, concurrency=None, duration_s=None, abandon_when_lost=may_abandon
    )
    if plan.level_e2e_multiple:
        level.update(
            steady_e2e_multiple=plan.level_e2e_multiple,
            max_duration_s=plan.level_stretch * plan.level_max_s,
            steady_soft_max_s=plan.level_max_s,
        )
    return level


def measure_capacity(
    url: str,
    config: ServeConfig,
    ctx: TrialContext,
    number: int,
    on_level: Callable[[Level], None],
    hopeless: Callable[[float], str | None] | None = None,
    plan: MeasurePlan | None = None,
    fresh: Callable[[], str] | None = None,
    run: Callable[[LoadSpec], LoadReport] = run_load,
) -> CapacityResult:
    """The capacity search against ``url``: a closed-loop probe, then Poisson rate levels (tuner.trial.capacity),
    each run by ``run`` (the load generator). ``fresh``: replaces the server and returns its URL; called before a
    rate level that follows a lost one."""
    plan = plan or ctx.plan
    levels = itertools.count()
    target = _Target(url, fresh)

    def spec(**kw: Any) -> LoadSpec:
        return load_spec(ctx, target.url, config, level_seed(ctx.plan.seed, number, next(levels)), **kw)

    def run_rate(rate: float, n: int, may_abandon: bool) -> LoadReport:
        target.before_level()
        return target.after_level(run(spec(**rate_level(plan, rate, n, may_abandon))))

    def run_probe(conc: int, n: int) -> LoadReport:
        return run(spec(rate=None, requests=n, concurrency=conc, duration_s=None))

    return capacity_search(run_rate, run_probe, plan, ctx.slos, on_level=on_level, hopeless=hopeless)


class _Target:
    """The server the next level goes to: a fresh one (``fresh``) after a rate level that was lost."""

    def __init__(self, url: str, fresh: Callable[[], str] | None) -> None:
        self.url, self._fresh, self._lost = url, fresh, False

    def before_level(self) -> None:
        if self._lost and self._fresh is not None:
            self.url = self._fresh()
        self._lost = False

    def after_level(self, report: LoadReport) -> LoadReport:
        self._lost = not report.holds
        return report
