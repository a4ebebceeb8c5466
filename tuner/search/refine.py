"""``tune --predict``'s ranking refined around its best: a random sample of the space can miss the region the model
itself rates best. On H200 run d the sample of 60 held nothing near the A30 grid's best point, which the model put
5 % above the configuration the search launched and which measured ~9 % above it
(results/h200-a30-grid-best-remeasured-2026-12-03). So, from the top trusted prediction of each calibrated family
and the first configuration of each engine family not calibrated, every configuration one knob away is predicted
too, for up to ROUNDS rounds while that moves the top."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from perfmodel.family import Family, family_of
from tuner.search.space import GMU_RANGE, knob_choices, suggest_config

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from perfmodel.rank import Prediction
    from tuner.search.families import Ranker
    from tuner.search.space import SpaceContext

ROUNDS = 2
GMU_STEP = 0.05  # neighbours' gpu_memory_utilization: a 0.05 grid over the space's range
# knobs whose change is another engine family or another GPU count: never a neighbour
OTHER_FAMILY = ("model_variant", "speculative_method", "num_speculative_tokens", "parallel_layout")


def neighbours(params: Mapping[str, Any], sctx: SpaceContext) -> dict[ServeConfig, dict[str, Any]]:
    """Every configuration one searched knob away from the one ``params`` (Optuna params) reproduce, each with
    its params. Turning chunked prefill on gives one neighbour per batch size; turning it off drops the size."""
    import optuna

    out: dict[ServeConfig, dict[str, Any]] = {}
    for knob, values in knob_choices(sctx).items():
        if knob in OTHER_FAMILY or knob not in params:
            continue
        if knob == "gpu_memory_utilization":
            values = tuple(v for v in values if round((v - GMU_RANGE[0]) * 100) % round(GMU_STEP * 100) == 0)
        for value in values:
            if value == params[knob]:
                continue
            variants = [{**params, knob: value}]
            if knob == "enable_chunked_prefill" and value:
                variants = [{**params, knob: True, "max_num_batched_tokens": b} for b in knob_choices(sctx)[
                    "max_num_batched_tokens"]]  # fmt: skip
            elif knob == "enable_chunked_prefill":
                variants = [{k: v for k, v in params.items() if k != "max_num_batched_tokens"} | {knob: False}]
            for p in variants:
                out.setdefault(suggest_config(optuna.trial.FixedTrial(p), sctx), p)
    return out


def kind(config: ServeConfig) -> tuple[str, str, int, str]:
    """The kind of engine family the search launches once when uncalibrated: weights, speculative method (any number
    of tokens), TP, KV dtype."""
    f = family_of(config)
    return (f.model, f.speculative.split(":")[0], f.tensor_parallel, f.kv_dtype)


def seeds(ranked: Sequence[Prediction]) -> list[Prediction]:
    """The top trusted prediction of each calibrated family and the first configuration of each kind of family not
    calibrated (its ranking figure orders them): the ones the search launches."""
    top: dict[Family, Prediction] = {}
    for p in ranked:
        if p.capacity_req_s is not None and p.seq_bound is None:
            top.setdefault(family_of(p.config), p)
    unseen: dict[tuple[str, str, int, str], Prediction] = {}
    for p in ranked:
        if p.capacity_req_s is None:
            unseen.setdefault(kind(p.config), p)
    return [*top.values(), *unseen.values()]


def refined(
    rank: Ranker,
    ranked: Sequence[Prediction],
    configs: Mapping[ServeConfig, dict[str, Any]],
    sctx: SpaceContext,
    say: Callable[[str], None],
) -> tuple[list[Prediction], dict[ServeConfig, dict[str, Any]]]:
    """``ranked`` (the sample's ranking) with the seeds' neighbours predicted and merged in, and ``configs`` with
    their params. Stops after ROUNDS rounds, or once a round leaves the seeds as they were."""
    t0, known, out = time.monotonic(), dict(configs), list(ranked)
    first = seeds(out)
    for _ in range(ROUNDS):
        before = seeds(out)
        new = {c: p for s in before for c, p in neighbours(known[s.config], sctx).items() if c not in known}
        if not new:
            break
        known.update(new)
        # predicted capacities stand as they are (same calibration); the uncalibrated seeds are ranked again beside
        # the neighbours, since only one ranking orders an uncalibrated family by its figure
        unseen = {s.config for s in before if s.capacity_req_s is None}
        again = rank([*unseen, *new])
        out = merge(again, [p for p in out if p.config not in unseen])
        if [s.config for s in seeds(out)] == [s.config for s in before]:
            break
    added, last = len(known) - len(configs), seeds(out)
    moved = sum(a.config != b.config for a, b in zip(first, last, strict=False))
    say(f"--predict: {added} configurations one knob from the {len(first)} best of their families predicted too "
        f"({time.monotonic() - t0:.0f} s): {moved} of those moved; the top trusted prediction "
        f"{_rate(first)} → {_rate(last)}")  # fmt: skip
    return out, known


def _rate(found: Sequence[Prediction]) -> str:
    top = found[0].capacity_req_s if found else None
    return f"{top:.3f} req/s" if top is not None else "none"


def merge(again: Sequence[Prediction], rest: Sequence[Prediction]) -> list[Prediction]:
    """One ranking from two: predicted ones by capacity (``rest``'s first on a tie: a neighbour must beat it), then
    the unpredicted (``again``'s first: its order holds the neighbours' ranking figures)."""
    predicted = [p for p in (*rest, *again) if p.capacity_req_s is not None]  # a tie keeps what was there first
    predicted.sort(key=lambda p: -(p.capacity_req_s or 0.0))
    return [*predicted, *(p for p in again if p.capacity_req_s is None), *(p for p in rest if p.capacity_req_s is None)]
