"""A study's spare speed on the machine at hand now, to set beside runs of that machine slowed by a known factor
(bench/slowed_host.py): the study's calibration, set to the speed one `vllm bench serve` run at the stated rate
measured here (its server's mean inter-token latency, from vLLM's /metrics: the runs keep no per-request TPOT),
serves the winner at that rate for that run's window, four draws on steps 1.0, 1.05, ... times as long. Prints one
line per slowdown (figures, not a test), then each slowed or faster run given, with its verdict.

    python bench/spare_speed_today.py results/STUDY AS_IS.json [RUN.json ...]

Why: a host's speed drifts from one fresh server to the next (this 2-core host served the tiny Llama's certified
rate with a server mean inter-token latency of 23.6 ms slowed 1.05 times and 35.9 ms as is, 25 minutes apart), so
slowed runs test the figure only from the speed the host had in their sitting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))


def model_today(study: Path, as_is: Path, scratch: Path) -> list[str]:
    """The lines: the speed the model was set to, then held draws per slowdown from there."""
    from offline_model import scratch_study_context

    from perfmodel.anchor import anchor_speed, mean_engine_itl_ms
    from perfmodel.family import family_of
    from tuner.certify.spare_speed import spare_speed
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate
    from tuner.search.predict_spare import family_calibration
    from tuner.search.study import open_study

    trial = json.loads((study / "best.json").read_text())["headline"]["best_trial"]
    _inp, ctx, _model, results = scratch_study_context(study, scratch)
    opened = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    best = results[trial]
    cal = family_calibration(opened, family_of(best.config))
    found = candidate(best.config, ctx)
    if cal is None or found is None:
        raise SystemExit(f"{study}: no calibration of trial {trial}'s family, or its budget drops it")
    run = json.loads(as_is.read_text())
    rate, seconds, server = run["rate"], run["seconds"], run["server"]
    engine = found.engine.with_blocks(int(server["kv_cache_tokens"]) // found.engine.block_size)
    demand = demand_of(ctx)
    loads = [demand.open_level(rate, round(rate * seconds), seed) for seed in (1, 2)]
    itl = float(server["server_itl_mean_ms"])
    anchor = anchor_speed(engine, cal.costs, loads, itl, metric=mean_engine_itl_ms)
    if anchor is None:
        return [f"{as_is.name}: no speed from half to twice the calibration's gives a mean ITL of {itl:.1f} ms"]
    found_spare = spare_speed(trial, rate, seconds, engine, cal.costs.slowed(anchor), demand, tuple(cal.trials))
    lines = [
        f"{as_is.name}: {rate} req/s for {seconds:.0f} s, server mean ITL {itl:.1f} ms: the model set to steps "
        f"x{anchor:.3f} the calibration's"
    ]
    lines += [
        f"  model, steps x{s.factor:.2f} slower: {s.held} of {s.draws} draws held (most preemptions "
        f"{s.preemptions_max})"
        for s in found_spare.slowed
    ]
    return lines


def measured_line(path: Path) -> str:
    """One run's verdict and what decided it."""
    run = json.loads(path.read_text())
    slowed = path.with_name(path.name.replace(".json", "-slowed.txt"))
    how = slowed.read_text().split("(")[0].replace("slowed_host: ", "").strip() if slowed.exists() else "as is"
    steady = run["steady"] or {}
    growth = (steady.get("ttft_growth_ms") or {}).get("estimate")
    verdict = {True: "held", False: "missed", None: "not judged"}[run["held"]]
    ttft = run["slo_values"].get("ttft_p95")
    return (
        f"  measured {path.name}: {run['rate']} req/s, {how}: {verdict}, p95 TTFT {ttft:.0f} ms, growth "
        f"{growth:+.0f} ms, server mean ITL {run['server']['server_itl_mean_ms']:.1f} ms, others "
        f"{run['host']['others']:.2f} cores"
    )


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit("give a study folder and a vllm_bench_check JSON of its stated rate on this host as is")
    for line in model_today(Path(argv[0]), Path(argv[1]), Path("/tmp/spare-speed-today")):
        print(line, flush=True)
    for run in argv[1:]:
        print(measured_line(Path(run)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
