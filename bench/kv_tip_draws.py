"""Does the performance model see a KV-bound edge tip, draw by draw? One trial of a committed study is simulated at
fixed Poisson rates for many draws (seeds) of one window, on the calibration that study stored (else a fit of its
trial 0, vLLM's defaults, as ``tune --predict`` makes first) and the KV blocks its servers had. Each draw prints the
model's preemptions, KV usage peak and p95 TTFT beside the verdict on the SLOs (prints figures, not a test; nothing
is measured). The same seed gives the same prompt lengths as ``bench/vllm_bench_check.py --seed`` sends
(PromptFactory); the arrival times are slotune's unless ``vllm`` is given.

    python bench/kv_tip_draws.py results/STUDY TRIAL NUM_GPU_BLOCKS WINDOW_S RATE[,RATE...] SEED[,SEED...] \
        [vllm] [slow=FACTOR[,FACTOR...]]

With ``vllm``, each draw is the one vLLM's client sends for that seed: the same prompts, in its shuffled order,
at its own gamma gaps (``vllm_client_load``). With ``slow=``, each draw is also run on machines that many times
slower than the calibration's (``Costs.slowed``: every step and front-end cost scaled), to ask how much speed an
edge has to spare.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))


def stored_calibration(study_db: Path):  # type: ignore[no-untyped-def]
    """The defaults' family's latest calibration, as the study stored it (tuner.search.predict_fit); None where the
    study was run without --predict."""
    from perfmodel.rank import Calibration
    from tuner.search.predict_fit import CALIBRATION_ATTR
    from tuner.search.study import open_study

    study = open_study(f"sqlite:///{study_db}", resume=True, seed=0, must_exist=True)
    stored = study.user_attrs.get(CALIBRATION_ATTR)
    return Calibration.from_dict(stored) if stored else None


def vllm_client_load(demand, rate: float, count: int, seed: int):  # type: ignore[no-untyped-def]
    """The draw ``bench/vllm_bench_check.py --seed`` sends through vLLM's client (vllm.benchmarks.serve): its custom
    dataset shuffled by ``random.seed(seed)``, its gaps drawn by NumPy's gamma (shape 1) after ``np.random.seed(seed)``
    and scaled so that the last falls at ``count / rate``."""
    import random

    import numpy as np

    from perfmodel.traffic import OpenLoad

    requests = list(demand.open_level(rate, count, seed).requests)
    random.seed(seed)
    random.shuffle(requests)
    np.random.seed(seed)
    gaps = np.cumsum([np.random.gamma(shape=1.0, scale=1.0 / rate) for _ in range(count)])
    offsets = gaps * (count / rate) / gaps[-1]
    return OpenLoad(tuple(float(t) for t in offsets), tuple(requests), rate)


def draw_line(rate: float, seed: int, window_s: float, engine, costs, demand, client: str, slow: float) -> str:  # type: ignore[no-untyped-def]
    """One draw: the whole window's requests on a fresh simulated server, judged on all of them; ``client``:
    ``loadtest`` (slotune's Poisson schedule) or ``vllm`` (vllm_client_load); ``slow``: the machine's slowdown."""
    from perfmodel.server import Server

    t0 = time.perf_counter()
    count = max(1, round(rate * window_s))
    load = vllm_client_load(demand, rate, count, seed) if client == "vllm" else demand.open_level(rate, count, seed)
    out = Server(engine, costs.slowed(slow)).run(load, demand.slos)
    ttft = out.value("ttft", 95) or float("nan")
    verdict = "held" if out.slo_met(demand.slos) else "missed"
    return (
        f"rate {rate:8.3f} seed {seed:4d} x{slow:.2f} slower: {verdict:6s} p95 TTFT {ttft:8.0f} ms, "
        f"{out.preemptions:6,d} preemptions, "
        f"KV peak {100 * out.kv_usage_peak:5.1f} %, running peak {out.running_peak:4d}, "
        f"{sum(r.prompt_tokens for r in load.requests):,} prompt tokens "
        f"({time.perf_counter() - t0:.1f} s)"
    )


def main(argv: list[str]) -> int:
    from offline_model import scratch_study_context

    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate

    study, trial, blocks, window = Path(argv[0]), int(argv[1]), int(argv[2]), float(argv[3])
    rates = [float(r) for r in argv[4].split(",")]
    seeds = [int(s) for s in argv[5].split(",")]
    client, slows = "loadtest", [1.0]
    for extra in argv[6:]:
        if extra.startswith("slow="):
            slows = [float(f) for f in extra.removeprefix("slow=").split(",")]
        elif extra in ("loadtest", "vllm"):
            client = extra
        else:
            raise SystemExit(f"{extra!r}: give loadtest or vllm (whose arrivals), or slow=FACTOR[,FACTOR...]")
    scratch = Path("/tmp/kv-tip-draws")
    _inp, ctx, model, results = scratch_study_context(study, scratch)
    cal = stored_calibration(scratch / "study.db")
    if cal is None:  # a study run without --predict: fit its defaults as tune --predict would before any launch
        print(f"{study.name}: no stored calibration; fitting trial 0 (vLLM's defaults)", flush=True)
        cal = model.calibrate([results[0]], None)
    cand = candidate(results[trial].config, ctx)
    if cand is None:
        raise SystemExit(f"trial {trial}: the KV budget drops its configuration")
    engine = cand.engine.with_blocks(blocks)
    demand = demand_of(ctx)
    print(
        f"{study.name}, trial {trial}: {engine.num_blocks:,} usable blocks x {engine.block_size}, "
        f"{engine.max_num_seqs} seqs x {engine.max_num_batched_tokens} batched tokens; calibrated on trials "
        f"{list(cal.trials)} ({cal.family}); {window:g}-s windows; arrivals as {client} sends them",
        flush=True,
    )
    for rate in rates:
        for seed in seeds:
            for slow in slows:
                print(draw_line(rate, seed, window, engine, cal.costs, demand, client, slow), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
