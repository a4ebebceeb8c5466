"""Offline validation of the performance model (issue #24; prints figures, not a test).

    python bench/perfmodel_validation.py [--out results/perfmodel-validation] [--study FOLDER ...]

For each committed study (``bench/perfmodel_studies.py``): calibrate the model on the study's defaults
(its baseline trial) alone, then predict every other measured configuration by replaying, on the model, the
very capacity search the study ran (short levels whose arrivals stop early; same seeds, same requests), and
compare the capacity found (the highest rate whose level met the SLO: ``best_rate_req_s``) and the goodput
there with the measured ones. Reported per study: median and worst |predicted − measured| / measured and
Spearman's rank correlation over the configurations of the defaults' engine family (same weights, no
speculative decoding), once with the defaults' KV dtype only and once including fp8 KV (extrapolated);
configurations of other families are listed as not predicted. Also: configurations measured more than once
in a study (the measurement's own spread), and the A30-memory study predicted from the native-H200 study's
defaults (same GPU and vLLM; only the memory differs).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_across import across_studies, cross_study, pooled  # noqa: E402
from perfmodel_rows import Row, describe, predict_all, stats, study_inputs  # noqa: E402
from perfmodel_studies import ROOT, STUDIES, Study  # noqa: E402

from perfmodel.capacity import steady_capacity  # noqa: E402
from perfmodel.rank import Calibration, Check, calibrate  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402


def repeats(results: list[TrialResult]) -> list[str]:
    """Configurations measured more than once in one study: the spread of their measured capacity."""
    by: dict[str, list[TrialResult]] = {}
    for r in results:
        by.setdefault(describe(r), []).append(r)
    out = []
    for conf, rs in by.items():
        caps = [r.best_rate for r in rs if r.best_rate]
        if len(caps) > 1:
            spread = (max(caps) - min(caps)) / statistics.mean(caps)
            out.append(
                f"  {conf}: trials {[r.number for r in rs]} capacity {[round(c, 1) for c in caps]} "
                f"(max−min {100 * spread:.0f} % of the mean)"
            )
    return out


def run_study(study: Study, evaluations: int, lines: list[str]) -> tuple[list[Row], Calibration, tuple]:
    inputs = study_inputs(study)
    _, gpu, spec, results, observed = inputs
    base = next(r for r in results if r.is_baseline)
    t0 = time.monotonic()
    cal = calibrate([observed[base.number]], spec, gpu, max_evaluations=evaluations)
    cal_s = time.monotonic() - t0
    rows = predict_all(study, cal, results, observed)
    checks = [
        Check(r.trial, r.predicted_req_s, r.measured_req_s)
        for r in rows
        if r.role == "predicted" and r.error is not None
    ]
    cal = cal.checked(*checks)
    lines.append(
        f"## {study.folder} ({study.machine}; {study.workload}, {study.slo}{'; ' + study.note if study.note else ''})"
    )
    lines.append(
        f"calibrated on trial {base.number} (the defaults) in {cal_s:.0f} s, fit loss {cal.loss:.2f}; "
        f"costs {json.dumps({k: float(f'{v:.3g}') for k, v in cal.costs.to_dict().items()})}"
    )
    lines.append("  same family, same KV dtype:  " + stats([r for r in rows if r.role == "predicted"]))
    lines.append(
        "  same family, any KV dtype:   " + stats([r for r in rows if r.role in ("predicted", "extrapolated")])
    )
    fitted = [r for r in rows if r.role == "calibration"]
    lines.append(
        f"  the defaults themselves (in-sample): measured {fitted[0].measured_req_s:.1f}, "
        f"predicted {fitted[0].predicted_req_s:.1f} req/s"
    )
    unseen = [r for r in rows if r.role == "not predicted"]
    lines.append(f"  not predicted (another engine family): {len(unseen)} trial(s) {[r.trial for r in unseen]}")
    secs = [r.seconds for r in rows if r.role != "not predicted"]
    lines.append(f"  prediction time per configuration: median {statistics.median(secs):.2f} s, max {max(secs):.2f} s")
    t0 = time.monotonic()
    base_obs = observed[base.number]
    steady = steady_capacity(base_obs.engine, cal.costs, base_obs.demand)
    lines.append(
        f"  steady-state capacity of the defaults (rank()'s default question; nothing measured to compare yet): "
        f"{steady:.1f} req/s, in {time.monotonic() - t0:.2f} s"
    )
    lines += repeats(results)
    return rows, cal, inputs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "results" / "perfmodel-validation"))
    ap.add_argument("--study", action="append", help="a study folder (default: all of perfmodel_studies.STUDIES)")
    ap.add_argument("--evaluations", type=int, default=300, help="objective evaluations per calibration")
    args = ap.parse_args()
    chosen = [s for s in STUDIES if not args.study or s.folder in args.study]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    lines = [
        f"# perfmodel offline validation, {time.strftime('%Y-%m-%d %H:%M')}, commit {commit.strip() or '?'}: "
        f"python bench/perfmodel_validation.py {' '.join(sys.argv[1:])}".rstrip()
    ]
    rows: list[Row] = []
    done: dict[str, tuple[Calibration, tuple]] = {}
    printed = 0
    for study in chosen:
        study_rows, cal, inputs = run_study(study, args.evaluations, lines)
        rows += study_rows
        done[study.folder] = (cal, inputs)
        print("\n".join(lines[printed:]), flush=True)
        printed = len(lines)
    if "h200-llama-3-8b-h200" in done and "h200-llama-3-8b-a30" in done:
        a30 = next(s for s in chosen if s.folder == "h200-llama-3-8b-a30")
        rows += cross_study(done["h200-llama-3-8b-h200"], done["h200-llama-3-8b-a30"][1], a30, lines)
    for machine in ("H200", "CPU"):
        rows += pooled(machine, done, args.evaluations, lines)
        lines.append(f"## {machine}: configurations measured in more than one study (the measurement's own spread)")
        across_studies(machine, done, lines)
    for machine in ("H200", "CPU"):
        folders = {s.folder for s in chosen if s.machine == machine}
        pooled_rows = [r for r in rows if r.study in folders]
        lines.append(f"## all {machine} studies pooled (per-study calibrations)")
        lines.append("  same family, same KV dtype:  " + stats([r for r in pooled_rows if r.role == "predicted"]))
        lines.append(
            "  same family, any KV dtype:   "
            + stats([r for r in pooled_rows if r.role in ("predicted", "extrapolated")])
        )
    out = Path(args.out)
    write_outputs(out, lines, rows, done)
    print("\n".join(lines[-8:]))
    print(f"written: {out}/summary.txt, predictions.csv, calibrations.json")
    return 0


CSV_COLUMNS = (
    "study,trial,role,config,measured_capacity_req_s,predicted_capacity_req_s,capacity_error,"
    "measured_goodput_req_s,predicted_goodput_req_s,goodput_error,predict_seconds,note"
).split(",")


def write_outputs(out: Path, lines: list[str], rows: list[Row], done: dict[str, tuple[Calibration, tuple]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    with open(out / "predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow(
                [r.study, r.trial, r.role, r.config]
                + [_num(x) for x in (r.measured_req_s, r.predicted_req_s, r.error)]
                + [_num(x) for x in (r.measured_goodput, r.predicted_goodput, r.goodput_error)]
                + [f"{r.seconds:.2f}", r.note]
            )
    (out / "calibrations.json").write_text(json.dumps({k: c.to_dict() for k, (c, _) in done.items()}, indent=1) + "\n")


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


if __name__ == "__main__":
    sys.exit(main())
