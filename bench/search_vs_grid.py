"""Search quality benchmark (prints figures; not a test): Optuna search vs an exhaustive grid.

    python bench/search_vs_grid.py --model DIR --gpu cpu --slo ttft_p95=2s --workload chat \
        --grid max_num_seqs=8,32,128 --grid enable_chunked_prefill=true,false --grid max_num_batched_tokens=512,2048 \
        --trials 8 --out /tmp/svg

Runs every grid point with the tuner's own trial (real vLLM, same capacity search), then a search study
of --trials trials (baseline first), and prints: the grid's best capacity, the search's best, their ratio,
after how many trials the search reached 95 % of the grid's best, and the gain over vLLM's defaults.
Results are kept in OUT/grid.jsonl (and the re-measurements, as each lands, in OUT/remeasure.jsonl), so an
interrupted run resumes. Goals (issue #6): ≥ 95 % of the grid's
best in ≤ 20 trials (compared on capacity, the highest rate that kept every SLO; on goodput for a
grid.jsonl written before its rows held capacity, and the output says so); ≥ +30 % over the defaults
baseline (name the workload with the figures).

On a GPU, where a trial costs minutes and device time comes in calls of ≤ 10 minutes:
``--search-from STUDY_DIR`` compares the grid with a study ``tune`` already ran (same model, workload,
SLO and level length; no new search), and ``--time-budget S`` starts no new grid point, and no new search
trial, once a typical one would overrun S seconds (run again to continue; exit code 3 says the grid or the
search is unfinished, and the figures printed then are interim).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grid_remeasure  # noqa: E402
from grid_points import measure_grid  # noqa: E402

from launch.config import ServeConfig  # noqa: E402
from tuner.certify.summary import Summary  # noqa: E402
from tuner.errors import UsageError  # noqa: E402
from tuner.inputs import Inputs, load_inputs  # noqa: E402
from tuner.pipeline import tune  # noqa: E402
from tuner.report.outputs import summarize  # noqa: E402
from tuner.search.study import results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings, resolve  # noqa: E402
from tuner.trial.context import TrialContext  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402
from tuner.trial.runner import run_trial  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402


def _grid_value(text: str) -> object:
    """true/false, a number, or else the word itself (kv_cache_dtype=auto,fp8)."""
    if text in ("true", "false"):
        return text == "true"
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_grid(items: list[str]) -> dict[str, list[object]]:
    grid: dict[str, list[object]] = {}
    for item in items:
        key, _, values = item.partition("=")
        grid[key] = [_grid_value(v) for v in values.split(",")]
    return grid


COMPARED = ("gpu", "slo", "workload", "level_seconds", "emulate_on", "load_format", "output_tokens", "seed")


def same_measurement(study_dir: Path, ours: dict) -> None:
    """Refuse a study measured differently from this grid (its best.json records the settings it ran with)."""
    try:
        theirs = json.loads((study_dir / "best.json").read_text())["settings"]
    except (OSError, KeyError, ValueError) as e:
        raise UsageError(f"--search-from {study_dir}: cannot read the study's settings from best.json ({e})") from e
    differ = [f"{k}: study {theirs.get(k)!r}, grid {ours.get(k)!r}" for k in COMPARED if theirs.get(k) != ours.get(k)]
    if differ:
        raise UsageError(
            f"--search-from {study_dir} was measured differently; pass the same options: " + "; ".join(differ)
        )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpu", default="cpu")
    ap.add_argument("--slo", default="ttft_p95=2s")
    ap.add_argument("--workload", default="chat")
    ap.add_argument("--grid", action="append", default=[], help="KNOB=v1,v2,... (repeat)")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--out", required=True)
    ap.add_argument("--vllm-python", default=sys.executable)
    ap.add_argument("--load-format")
    ap.add_argument("--level-seconds", type=float)
    ap.add_argument("--emulate-on", help="as tune's --emulate-on (memory emulation of a smaller GPU)")
    ap.add_argument("--output-tokens", type=int, help="as tune's --output-tokens (every request's output length)")
    ap.add_argument(
        "--search-from",
        type=Path,
        metavar="STUDY_DIR",
        help="compare with this finished tune study instead of running a search",
    )
    ap.add_argument(
        "--time-budget",
        type=float,
        metavar="S",
        help="no new grid point or search trial past S seconds (covers both stages)",
    )
    ap.add_argument(
        "--remeasure",
        type=int,
        default=0,
        metavar="N",
        help="then measure the grid's best, the search's best and the defaults N more times each "
        "(fresh servers, interleaved): one measurement per config is noisy, and the best of "
        "many noisy measurements is biased upwards",
    )
    ap.add_argument(
        "--remeasure-search-first",
        action="store_true",
        help="start the re-measurements with the search's best instead of the grid's best (two "
        "workers on two GPUs, one each way, spread the order's effect)",
    )
    return ap


def tune_settings(args: argparse.Namespace) -> TuneSettings:
    """The settings every trial (grid point and search) runs with: what ``--search-from`` compares."""
    out = Path(args.out)
    return resolve(
        {},
        {
            "model": args.model,
            "gpu": args.gpu,
            "slo": args.slo,
            "workload": args.workload,
            "trials": args.trials,
            "out": str(out / "search"),
            "vllm_python": args.vllm_python,
            "load_format": args.load_format,
            "resume": (out / "search" / "study.db").exists() or None,
            "level_seconds": args.level_seconds,
            "emulate_on": args.emulate_on,
            "output_tokens": args.output_tokens,
        },
    )


def search_progress(results: list, measure: str, grid_best: float) -> tuple[float, int | None]:
    """The search's best after its last trial, and after how many trials it first reached 95 % of the grid's best,
    as tune judges it: a configuration measured more than once counts with its mean (tuner.certify.summary)."""
    running, reached = 0.0, None
    for k in range(len(results)):
        so_far = summarize(results[: k + 1])
        running = (
            so_far.best_capacity if measure == "capacity" else statistics.fmean(so_far.best_goodputs or (0,))
        ) or 0.0
        if reached is None and grid_best > 0 and running >= 0.95 * grid_best:
            reached = k + 1
    return running, reached


def print_comparison(
    inp: Inputs, study_dir: Path, results: list, summary: Summary, measure: str, grid_best: float, n_points: int
) -> None:
    running, reached = search_progress(results, measure, grid_best)
    best = summary.best
    print(f"workload {inp.workload.name}, SLO {inp.settings.slo}, GPU profile {inp.gpu.name}, vLLM {inp.vllm.version}")
    print(f"grid: {n_points} points, best {measure} {grid_best:.3f} req/s")
    print(
        f"search ({study_dir}): {len(results)} trials, best {measure} {running:.3f} req/s = "
        f"{(running / grid_best * 100 if grid_best else 0):.0f}% of the grid's best; "
        + (f"95% reached after {reached} trials" if reached else f"95% not reached in {len(results)} trials")
    )
    if summary.gain_over_baseline is not None and best is not None:
        print(
            f"gain over vLLM defaults: {summary.gain_over_baseline * 100:+.0f}% ({summary.baseline_note}; "
            f"best: trial {best.number}'s configuration, {summary.best_capacity_text()})"
        )
    else:
        print("gain over vLLM defaults: n/a (no baseline that met the SLO)")


def remeasure_contenders(
    args: argparse.Namespace,
    base: ServeConfig,
    ctx: TrialContext,
    done: dict,
    measure: str,
    best: TrialResult | None,
    out: Path,
    t0: float,
    took: list[float],
) -> int:
    """--remeasure: the grid's best point, vLLM's defaults and the search's best again on fresh servers."""
    grid_point = max(done.values(), key=lambda r: r[f"{measure}_req_s"])["point"]
    contenders = {"grid best " + json.dumps(grid_point): replace(base, **grid_point), "vLLM defaults": base}
    if best is not None and not best.is_baseline:
        contenders[f"search best (trial {best.number})"] = best.config
    if args.remeasure_search_first:
        contenders = dict(reversed(contenders.items()))
    left = (lambda: args.time_budget - (time.monotonic() - t0)) if args.time_budget else None
    try:
        got = grid_remeasure.remeasure(
            contenders,
            args.remeasure,
            lambda k, c, say: run_trial(k, c, False, ctx, say),
            out / "remeasure.jsonl",
            left,
            took,
        )
    except grid_remeasure.BudgetSpent as e:
        print(f"time budget of {args.time_budget:.0f} s nearly spent: {e}; run again to continue", flush=True)
        return 3
    for line in grid_remeasure.summary_lines(got):
        print(line, flush=True)
    return 0


def main() -> int:
    args = build_parser().parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = tune_settings(args)
    if args.search_from is not None:
        try:
            same_measurement(args.search_from, settings.to_dict())
        except UsageError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    inp = load_inputs(settings)
    base = base_config(inp)
    ctx = trial_context(inp, out / "grid-logs")
    grid = parse_grid(args.grid)
    points = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
    t0, took = time.monotonic(), list[float]()
    done = measure_grid(args, base, ctx, points, out / "grid.jsonl", t0, took)
    if done is None:
        return 3
    measure = "capacity" if all("capacity_req_s" in r for r in done.values()) else "goodput"
    grid_best = max((r[f"{measure}_req_s"] for r in done.values()), default=0.0)

    study_dir = args.search_from or out / "search"
    if args.search_from is None:
        if args.time_budget:
            left = args.time_budget - (time.monotonic() - t0)
            inp = replace(inp, settings=replace(settings, time_budget=max(left, 1.0)))
        tune(inp)
    import optuna

    study = optuna.load_study(study_name="slotune", storage=f"sqlite:///{study_dir.resolve()}/study.db")
    results = sorted(results_of(study), key=lambda r: r.number)
    summary = summarize(results)
    print_comparison(inp, study_dir, results, summary, measure, grid_best, len(points))
    if args.search_from is None and len(results) < args.trials:
        print(
            f"search unfinished: {len(results)}/{args.trials} trials (figures above are interim); "
            "run again to continue",
            flush=True,
        )
        return 3
    if args.remeasure:
        return remeasure_contenders(args, base, ctx, done, measure, summary.best, out, t0, took)
    return 0


if __name__ == "__main__":
    sys.exit(main())
