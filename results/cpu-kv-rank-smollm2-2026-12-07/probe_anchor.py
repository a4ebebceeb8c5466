"""Offline probe (after phase 3, not part of the plan): is the model's low level on these points its step speed?
The calibration of predict.py, its costs then slowed (or sped) so that the model's mean TPOT at the defaults'
best level equals the mean TPOT that level measured (perfmodel.anchor, as the spare-speed check anchors), and
every configuration predicted again. Uses only the defaults' own measurement.
    python probe_anchor.py CODE STUDY > probe-anchor.txt"""

import sys
from dataclasses import replace
from pathlib import Path


def main() -> None:
    code, study = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path[:0] = [str(code), str(code / "scripts/gpu"), str(Path(__file__).parent)]
    from configs import CONFIGS
    from offline_model import scratch_study_context

    from perfmodel.anchor import anchor_speed, mean_tpot_ms
    from perfmodel.capacity import steady_capacity
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate

    _inp, ctx, model, results = scratch_study_context(study, Path("/tmp/kvs/scratch-probe"))
    base = results[min(results)]
    cal = model.calibrate([base], None)
    demand = demand_of(ctx)
    eng = candidate(base.config, ctx).engine
    rate, measured = base.best_rate, base.report.tpot_ms.mean
    loads = [demand.open_level(rate, round(rate * 120), s) for s in (1, 2)]
    print(
        f"defaults' best level {rate:.3f} req/s: measured mean TPOT {measured:.1f} ms; "
        f"the calibration's model {mean_tpot_ms(eng, cal.costs, loads):.1f} ms"
    )
    f = anchor_speed(eng, cal.costs, loads, measured)
    print(f"anchor factor on the step costs: {f}")
    if f is None:
        return
    costs = cal.costs.slowed(f)
    rows = [("defaults (calibrated on)", base.config, None)]
    rows += [(n, replace(base.config, **knobs), tokens) for n, (knobs, tokens) in CONFIGS.items()]
    for name, cfg, tokens in rows:
        c = candidate(cfg, ctx).engine
        e = c if tokens is None else replace(c, num_blocks=tokens // c.block_size)
        calibrated, anchored = steady_capacity(e, cal.costs, demand), steady_capacity(e, costs, demand)
        print(
            f"{name}: calibrated {calibrated:.3f}, anchored {anchored:.3f} req/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
