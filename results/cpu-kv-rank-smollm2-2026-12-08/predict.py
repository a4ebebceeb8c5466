"""Phase 2 (offline, before any configuration is measured): three calibrations on this sitting's vLLM defaults (trial 0
of STUDY) predict each configuration of configs.py at steady state:
- the candidate: the calibration also fits vLLM's engine-side mean TTFT (queue + prefill) of each level
  (``observed_levels(..., engine_ttft="all")``); its figure comes first and seeds the measured rates;
- the landed model: ``tune --predict``'s own calibration (client percentiles only);
- a second candidate: the first, fitting vLLM's mean inter-token latency of each level as well.
    python predict.py CODE STUDY [CONFIG_FOLDER] > predictions.txt
CONFIG_FOLDER: take configs.py from there instead (the post-hoc refit of the 2026-12-07 check's a-e)."""

import sys
from dataclasses import replace
from pathlib import Path


def main() -> None:
    code, study = Path(sys.argv[1]), Path(sys.argv[2])
    configs_at = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(__file__).parent
    sys.path[:0] = [str(code), str(code / "scripts/gpu"), str(configs_at)]
    from configs import CONFIGS, flags
    from offline_model import scratch_study_context

    from perfmodel.rank import Candidate, calibrate, predict
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import FIRST_EVALUATIONS, candidate, observed_levels

    _inp, ctx, model, results = scratch_study_context(study, Path("/tmp/kvs2/scratch"))
    base = results[min(results)]
    demand = demand_of(ctx)
    landed = model.calibrate([base], None)
    observed = observed_levels(base, demand, ctx.plan, engine_ttft="all")
    fitted = calibrate(observed, ctx.spec, ctx.speed_gpu, max_evaluations=FIRST_EVALUATIONS, workers=None)
    with_itl = [
        replace(o, levels=tuple(replace(lv, engine_itl_ms=raw.server.server_itl_mean_ms) for lv in o.levels))
        for o, raw in zip(observed, base.levels, strict=True)
    ]
    both = calibrate(with_itl, ctx.spec, ctx.speed_gpu, max_evaluations=FIRST_EVALUATIONS, workers=None)
    print(f"calibrated on trial {base.number} (search estimate {base.best_rate:.3f} req/s)")
    print(f"  candidate (engine TTFT fitted): {fitted.costs}")
    print(f"  landed: {landed.costs}")
    print(f"  engine TTFT and ITL fitted: {both.costs}")
    rows = [("defaults (calibrated on)", base.config, None)]
    rows += [(n, replace(base.config, **knobs), tokens) for n, (knobs, tokens) in CONFIGS.items()]
    for name, cfg, tokens in rows:
        c = candidate(cfg, ctx)
        if c is None:
            print(f"{name}: infeasible by the KV budget")
            continue
        eng = c.engine if tokens is None else replace(c.engine, num_blocks=tokens // c.engine.block_size)
        new, old, itl = (predict(Candidate(cfg, eng), cal, demand) for cal in (fitted, landed, both))
        flag = f"  FLAGGED: {new.seq_bound}" if new.seq_bound else ""
        extra = " ".join(flags(name)) if name in CONFIGS else ""
        print(
            f"{name}: predicted {new.capacity_req_s:.3f} req/s; landed model {old.capacity_req_s:.3f} req/s; "
            f"engine TTFT and ITL fitted {itl.capacity_req_s:.3f} req/s; "
            f"engine {eng}; flags [{extra}]{flag}",
            flush=True,
        )


if __name__ == "__main__":
    main()
