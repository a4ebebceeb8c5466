"""The real-vLLM side of certification and verification: a fresh server for a configuration, and one
soak level (a fixed rate held for ``MeasurePlan.soak_s``) against it."""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator, Sequence

from launch.config import ServeConfig
from loadtest.runner import run_load
from loadtest.spec import LoadSpec
from loadtest.steady import MIN_LIFETIMES
from tuner.certify.certification import Certification, KeepSoaks, certify
from tuner.certify.soak_record import Soak, soak_of
from tuner.trial.capacity import MIN_LEVEL_FLOOR
from tuner.trial.context import TrialContext, launched_config, launcher_of, load_spec
from tuner.trial.launcher import Server
from tuner.trial.level import Level

SOAK_SEED = 7919  # soaks draw other prompts and arrivals than the search's levels
# a soak goes on past its seconds until it has lasted this many mean request lifetimes so far (the judgement needs
# loadtest.steady.MIN_LIFETIMES over all its requests, the later ones longer under load), for at most SOAK_STRETCH
# times its seconds
SOAK_LIFETIMES = MIN_LIFETIMES + 1
SOAK_STRETCH = 2.0


@contextlib.contextmanager
def fresh_server(
    config: ServeConfig, ctx: TrialContext, label: str, progress: Callable[[str], None], device: str | None = None
) -> Iterator[Server]:
    """Start ``config`` as the trials do (the context's launcher, emulated memory, warm-up), stop it on exit;
    stopped at once too when the run stops (tuner.trial.device_rules)."""
    launched = launched_config(config, ctx, device)
    say = ctx.rules.cancel.checked(progress)
    with launcher_of(ctx).start(launched, ctx.log_dir / label, say) as server, ctx.rules.cancel.holding(server):
        yield server


def soak_spec(url: str, config: ServeConfig, ctx: TrialContext, rate: float, seconds: float, attempt: int) -> LoadSpec:
    """The load of one soak: ``rate`` for ``seconds``, longer while that is under SOAK_LIFETIMES request lifetimes
    (at most SOAK_STRETCH × ``seconds``), abandoned once an SLO is certainly lost. Each ``attempt`` on one server
    draws other prompts (a repeat would be served from the prefix cache)."""
    return load_spec(
        ctx,
        url,
        config,
        ctx.plan.seed + SOAK_SEED * (attempt + 1),
        rate=rate,
        requests=max(MIN_LEVEL_FLOOR, round(rate * seconds)),
        abandon_when_lost=True,
        steady_e2e_multiple=SOAK_LIFETIMES,
        max_duration_s=SOAK_STRETCH * seconds,
    )


def run_soak(url: str, config: ServeConfig, ctx: TrialContext, rate: float, seconds: float, attempt: int = 0) -> Soak:
    """Hold ``rate`` against the server at ``url`` (soak_spec) and judge it."""
    return soak_of(rate, run_load(soak_spec(url, config, ctx, rate, seconds, attempt)), ctx.slos)


def window_hint(cert: Certification) -> str | None:
    """What to change when a soak above the certified rate ended unjudged (its window too short for its request
    lifetimes): the --soak-seconds that would let it run SOAK_LIFETIMES of them. None: none did."""
    certified = cert.certified_rate or 0.0
    short = [s for s in cert.soaks if s.unjudged and s.rate > certified and s.lifetime_s]
    if not short:
        return None
    worst = max(short, key=lambda s: s.lifetime_s or 0.0)
    needed = math.ceil(SOAK_LIFETIMES * (worst.lifetime_s or 0.0) / SOAK_STRETCH)
    return (
        f"a soak at {worst.rate:.3f} req/s ended unjudged: its arrivals lasted {worst.lifetimes:.1f} request "
        f"lifetimes of {worst.lifetime_s:.1f} s, and a {cert.soak_s:.0f}-s soak runs at most "
        f"{SOAK_STRETCH * cert.soak_s:.0f} s; the certified rate may be understated: --soak-seconds {needed} or "
        f"more runs {SOAK_LIFETIMES:g} of them"
    )


def certify_config(
    trial: int,
    config: ServeConfig,
    ctx: TrialContext,
    estimate: float,
    floor: float,
    progress: Callable[[str], None],
    device: str | None = None,
    first: float | None = None,
    prior: tuple[Soak, ...] = (),
    keep: KeepSoaks = lambda _s: None,
    levels: Sequence[Level] = (),
) -> Certification:
    """Certify ``config`` on a fresh server from the search's ``estimate`` (or ``first``) down, or on from the
    ``prior`` soaks of an interrupted certification; ``levels``: its search levels (tuner.certify.certification)."""
    seconds = ctx.plan.soak_s
    attempts = itertools.count(len(prior))  # each soak its own prompts, across an interruption too
    return certify(
        trial,
        estimate,
        floor,
        seconds,
        lambda: fresh_server(config, ctx, f"certify-{trial:03d}", progress, device),
        lambda url, rate: run_soak(url, config, ctx, rate, seconds, next(attempts)),
        progress,
        first,
        prior,
        keep,
        levels,
        ctx.slos,
    )
