"""Phase 2 (offline, before any configuration is measured): the model calibrated on this sitting's vLLM defaults
(trial 0 of STUDY, as `tune --predict` calibrates them) predicts each configuration of configs.py at steady state.
    python predict.py CODE STUDY > predictions.txt"""

import sys
from dataclasses import replace
from pathlib import Path


def main() -> None:
    code, study = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path[:0] = [str(code), str(code / "scripts/gpu"), str(Path(__file__).parent)]
    from configs import CONFIGS, flags
    from offline_model import scratch_study_context

    from perfmodel.rank import Candidate, predict
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate

    _inp, ctx, model, results = scratch_study_context(study, Path("/tmp/kvs/scratch"))
    base = results[min(results)]
    cal = model.calibrate([base], None)
    print(f"calibrated on trial {base.number} (search estimate {base.best_rate:.3f} req/s): {cal.costs}")
    demand = demand_of(ctx)
    rows = [("defaults (calibrated on)", base.config, None)]
    rows += [(n, replace(base.config, **knobs), tokens) for n, (knobs, tokens) in CONFIGS.items()]
    for name, cfg, tokens in rows:
        c = candidate(cfg, ctx)
        if c is None:
            print(f"{name}: infeasible by the KV budget")
            continue
        eng = c.engine if tokens is None else replace(c.engine, num_blocks=tokens // c.engine.block_size)
        p = predict(Candidate(cfg, eng), cal, demand)
        flag = f"  FLAGGED: {p.seq_bound}" if p.seq_bound else ""
        extra = " ".join(flags(name)) if name in CONFIGS else ""
        print(f"{name}: predicted {p.capacity_req_s:.3f} req/s; engine {eng}; flags [{extra}]{flag}", flush=True)


if __name__ == "__main__":
    main()
