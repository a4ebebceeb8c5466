"""``bench/search_vs_grid.py --remeasure``: the grid's best, the search's best and vLLM's defaults measured again
on fresh servers, round-robin. Each measurement is appended to remeasure.jsonl as it lands (with its whole
trial), so a run cut by a device call's limit goes on from there; a time budget starts no measurement that a
typical one would overrun."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from launch.config import ServeConfig
from tuner.trial.result import TrialResult


class BudgetSpent(Exception):
    """The time budget would be overrun by one more measurement: run again to go on."""


def stored(path: Path) -> dict[tuple[int, str], TrialResult]:
    """The measurements an earlier run kept, by (k, contender); rows without their trial are measured again."""
    if not path.exists():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {(r["k"], r["name"]): TrialResult.from_dict(r["result"]) for r in rows if "result" in r}


def remeasure(
    contenders: dict[str, ServeConfig],
    rounds: int,
    run: Callable[[int, ServeConfig, Callable[[str], None]], TrialResult],
    path: Path,
    budget_left: Callable[[], float] | None = None,
    typical_s: list[float] | None = None,
) -> dict[str, tuple[float, ...]]:
    """Every contender measured ``rounds`` times (tuner.certify.confirm.remeasure's order); ``run(k, config,
    progress)`` is one fresh trial. Raises BudgetSpent before a measurement that would overrun the budget."""
    from tuner.certify.confirm import remeasure as round_robin

    kept = stored(path)
    took = typical_s if typical_s is not None else []

    def measure(k: int, name: str, config: ServeConfig, _device: object) -> TrialResult:
        if (k, name) in kept:
            print(f"[{name}] kept from an earlier run: {kept[(k, name)].capacity_req_s:.3f} req/s", flush=True)
            return kept[(k, name)]
        if budget_left is not None and took and statistics.median(took) > budget_left():
            typical = statistics.median(took)
            raise BudgetSpent(f"{len(kept)} re-measurement(s) kept; a typical one takes {typical:.0f} s")
        started = time.monotonic()
        res = run(2000 + k, config, lambda m: print(f"[{name}] {m}", flush=True))
        took.append(time.monotonic() - started)
        row = {"name": name, "k": k, "capacity_req_s": res.capacity_req_s, "goodput_req_s": res.goodput_req_s}
        with path.open("a") as f:
            f.write(json.dumps(row | {"result": res.to_dict()}) + "\n")
        kept[(k, name)] = res
        return res

    got = round_robin(contenders, rounds, measure, lambda m: print(m, flush=True))
    return {name: tuple(cap for cap, _device in vals) for name, vals in got.items()}


def summary_lines(got: dict[str, tuple[float, ...]]) -> list[str]:
    """Mean and range per contender, then the search's best (or the defaults, if they won) against the grid's best
    and the gain over the defaults, all on these re-measurements. Contender names as search_vs_grid gives them."""
    means = {name: statistics.fmean(vals) for name, vals in got.items()}
    lines = [
        f"re-measured {name}: mean {means[name]:.3f} req/s over {len(vals)} (min {min(vals):.3f}, max {max(vals):.3f})"
        for name, vals in got.items()
    ]
    grid_mean = next(v for k, v in means.items() if k.startswith("grid best"))
    best_search = max((v for k, v in means.items() if not k.startswith("grid best")), default=0.0)
    top = max(means, key=means.__getitem__)
    ratio = f"{best_search / grid_mean * 100:.0f}%" if grid_mean else "n/a (the grid's best held no rate)"
    gain = f"{(means[top] / means['vLLM defaults'] - 1) * 100:+.0f}% ({top})" if means.get("vLLM defaults") else "n/a"
    lines.append(
        f"re-measured: the search's best (or the defaults, if they won) = {ratio} of the grid's best; "
        f"defaults → best: {gain}"
    )
    return lines
