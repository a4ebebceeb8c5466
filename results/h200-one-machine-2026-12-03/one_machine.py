"""Offline, on the dev machine: the points of this folder, and the earlier machines' pairs, predicted from vLLM's
defaults measured on the same machine (machine 2 had none: its 256-sequence chunked point stands in). LEVELS=1
adds the level-by-level lines. EAGER_MS="4 8 12" fixes Costs.eager_s, the host's cost of a step over vLLM 0.26's
CUDA-graph ceiling, before each calibration: a term tried and not adopted (apply eager-term.patch, on 1146026,
to the checkout this folder is in).

    ../../.venv/bin/python one_machine.py > one-machine.txt
    EAGER_MS="4 8 12" ../../.venv/bin/python one_machine.py > eager-sweep.txt   # with eager-term.patch applied
"""
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
R = HERE.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(R / "h200-capped-points-2026-12-02"))
sys.path.insert(0, str(R / "h200-llama-3-8b-a30-predict-2026-12-02-b-each")); sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc  # noqa: E402
import perfmodel.rank as rank  # noqa: E402
from points_check import level_lines  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402
from tuner.tune_setup import trial_context  # noqa: E402

CAPPED = R / "h200-capped-points-2026-12-02"


def rows(path: Path) -> list[tuple[str, TrialResult, float]]:
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        pt = row["point"]
        label = "defaults" if not pt else (f"{pt['max_num_seqs']} seqs, {pt['max_num_batched_tokens']} tokens, "
                                           f"chunked={pt['enable_chunked_prefill']}")
        out.append((label, TrialResult.from_dict(row["result"]), row["capacity_req_s"]))
    return out


# (machine, calibrated on, predicted): the same machine's defaults, or on machine 2 (no defaults) its 256-seq point
CASES = [
    ("machine B (this folder)", HERE / "k4-defaults-again/grid.jsonl",
     [HERE / "k1-pick/grid.jsonl", HERE / "k2-128-2048/grid.jsonl", HERE / "k3-256-5120/grid.jsonl"]),
    ("machine 3 (2026-12-02)", CAPPED / "same-machine/defaults/grid.jsonl", [CAPPED / "same-machine/p0/grid.jsonl"]),
    ("machine 2 (2026-12-02; no defaults there)", CAPPED / "grid.jsonl", [CAPPED / "grid.jsonl"]),
]
BASE_LABEL = "256 seqs, 5120 tokens, chunked=True"  # machine 2's stand-in for the defaults (graph ceiling 512)


def main() -> None:
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/one-machine/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    physical = rank.physical_costs
    for eager_ms in [float(v) for v in os.environ.get("EAGER_MS", "0").split()]:
        rank.physical_costs = lambda *a, e=eager_ms: replace(physical(*a), **({"eager_s": e / 1000} if e else {}))
        print(f"== eager_s {eager_ms} ms (checkout {ROOT.name})")
        errors = []
        for machine, base, targets in CASES:
            b = next(row for row in rows(base) if row[0] in ("defaults", BASE_LABEL))
            t0 = time.monotonic()
            cal = model.calibrate([b[1]], None)
            print(f"{machine}: calibrated on {b[0]} ({b[2]:.3f}) in {time.monotonic() - t0:.0f} s: {cal.costs}")
            (pb,) = model.rank([b[1].config], cal)
            print(f"  {b[0] + ' (in-sample)':40} predicted {pb.capacity_req_s:7.3f} measured {b[2]:7.3f} "
                  f"({(pb.capacity_req_s / b[2] - 1) * 100:+.1f} %)")
            for path in targets:
                for label, r, measured in rows(path):
                    if label == b[0]:
                        continue
                    (p,) = model.rank([r.config], cal)
                    err = p.capacity_req_s / measured - 1
                    errors.append((err, p.capacity_req_s, measured))
                    flag = "  fills max_num_seqs: not trusted" if getattr(p, "seq_bound", None) else ""
                    print(f"  {label:40} predicted {p.capacity_req_s:7.3f} measured {measured:7.3f} ({err * 100:+.1f} %)"
                          + flag, flush=True)
                    if os.environ.get("LEVELS"):
                        print("\n".join(level_lines(r, cal, demand, ctx.plan)))
        med = statistics.median(abs(e) for e, _, _ in errors)
        print(f"  out of sample: median |error| {med * 100:.1f} %, worst {max(abs(e) for e, _, _ in errors) * 100:.1f} %")


if __name__ == "__main__":
    main()
