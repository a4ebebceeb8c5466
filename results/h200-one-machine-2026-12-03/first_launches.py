"""Offline, on the dev machine: run b's first ranking (its sample: --predict-sample 60, the study's seed), from the
defaults measured on machine B (this folder) and on machine 3, with the seq-bound rule (perfmodel.rank.SEQ_BOUND):
which configurations tune --predict now launches first, and which predictions it no longer trusts.

    ../../.venv/bin/python first_launches.py > first-launches.txt
"""
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
R = HERE.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(R / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"))
sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc  # noqa: E402
from tuner.search.predict_model import sample_space  # noqa: E402
from tuner.search.predict_search import Queue  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402
from tuner.tune_setup import base_config, space_context  # noqa: E402

DEFAULTS = {
    "machine B": HERE / "k4-defaults-again/grid.jsonl",
    "machine 3": R / "h200-capped-points-2026-12-02/same-machine/defaults/grid.jsonl",
}


def main() -> None:
    model, inp = oc.model_for("h200")
    configs = list(sample_space(space_context(inp, base_config(inp), None), 60, inp.settings.seed))
    for machine, path in DEFAULTS.items():
        row = json.loads(path.read_text())
        defaults = TrialResult.from_dict(row["result"])
        t0 = time.monotonic()
        cal = model.calibrate([defaults], None)
        ranked = model.rank(configs, cal)
        print(f"{machine}: calibrated on its defaults ({row['capacity_req_s']:.3f} measured), "
              f"{len(ranked)} of {len(configs)} sampled feasible, ranked in {time.monotonic() - t0:.0f} s")
        bound = [p for p in ranked if p.seq_bound]
        print(f"  {sum(1 for p in ranked if p.capacity_req_s)} predicted; {len(bound)} fill max_num_seqs at their "
              "predicted rate (not trusted)")
        for p in [p for p in ranked if p.capacity_req_s][:6]:
            flag = "  (fills max_num_seqs)" if p.seq_bound else ""
            print(f"    {p.capacity_req_s:7.3f} req/s  {oc._knobs(p.config)}{flag}")
        q = Queue.of(ranked, {defaults.config}).beating(row["capacity_req_s"])  # the defaults, measured first
        order, launched = [], 0
        while (pick := q.next(launched, None)) is not None and len(order) < 3:
            order.append(pick)
            launched += int(pick.capacity_req_s is not None)
            q = q.without(pick.config)
        print("  the launches after the defaults, in order (--trials 4):")
        for p in order:
            what = f"{p.capacity_req_s:7.3f} req/s" if p.capacity_req_s else "not predicted"
            print(f"    {what}  {oc._knobs(p.config)}" + ("  (seq-bound: measured once)" if p.seq_bound else ""))
        print("  (the seq-bound pick is launched only while it beats the best measured; the defaults' beat it here)"
              if not any(p.seq_bound for p in order) else "")


if __name__ == "__main__":
    main()
