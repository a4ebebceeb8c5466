"""Offline probe (after phase 3, not part of the plan): the calibrated model's p95 TTFT, mean TPOT and preemptions
at the rates vllm bench serve ran (steady state, 150 s judged whole as the benchmark judges), beside the
measurements. Where is the model's SLO edge early?
    python probe_ttft.py CODE STUDY OUT > probe-ttft.txt"""

import json
import sys
from dataclasses import replace
from pathlib import Path


def main() -> None:
    code, study, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    sys.path[:0] = [str(code), str(code / "scripts/gpu"), str(Path(__file__).parent)]
    from configs import CONFIGS
    from offline_model import scratch_study_context

    from perfmodel.capacity import SteadyState, steady_outcome
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate

    _inp, ctx, model, results = scratch_study_context(study, Path("/tmp/kvs/scratch-probe2"))
    base = results[min(results)]
    cal = model.calibrate([base], None)
    demand = demand_of(ctx)
    how = SteadyState(duration_s=150.0, settle_s=0.0)
    for name, (knobs, tokens) in CONFIGS.items():
        c = candidate(replace(base.config, **knobs), ctx).engine
        e = c if tokens is None else replace(c, num_blocks=tokens // c.block_size)
        for f in sorted((out / name).glob("bench-*.json"), key=lambda p: json.loads(p.read_text())["rate"]):
            d = json.loads(f.read_text())
            o = steady_outcome(e, cal.costs, demand, d["rate"], how)
            ttft = sorted(o.samples("ttft"))
            tpot = o.samples("tpot")
            p95 = ttft[min(len(ttft) - 1, int(0.95 * len(ttft)))] if ttft else float("nan")
            print(
                f"{name} at {d['rate']:.3f}: measured p95 TTFT {d['slo_values']['ttft_p95']:.0f} ms, "
                f"vLLM's mean ITL {d['server']['server_itl_mean_ms']:.0f} ms, "
                f"preemptions {d['server']['preemptions']}, "
                f"{'held' if d['held'] else 'missed'} | model p95 TTFT {p95:.0f} ms, mean TPOT "
                f"{sum(tpot) / max(1, len(tpot)):.0f} ms, preemptions {o.preemptions}, running peak {o.running_peak}",
                flush=True,
            )


if __name__ == "__main__":
    main()
