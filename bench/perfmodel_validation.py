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
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_studies import ROOT, STUDIES, Study, load_seed, trial_results  # noqa: E402

from loadtest.slo import parse_slos  # noqa: E402
from loadtest.workload import load_workload  # noqa: E402
from perfmodel.capacity import steady_capacity  # noqa: E402
from perfmodel.observed import ObservedTrial, observe  # noqa: E402
from perfmodel.rank import Calibration, Candidate, Check, calibrate, predict  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.budget.gpu import GPUProfile  # noqa: E402
from tuner.model.spec import ModelSpec  # noqa: E402
from tuner.synthetic import shape_config  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402

KNOBS = ("max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill", "enable_prefix_caching", "kv_cache_dtype")


@dataclass(frozen=True)
class Row:
    study: str
    trial: int
    role: str  # calibration | predicted | extrapolated | not predicted
    config: str
    measured_req_s: float | None
    predicted_req_s: float | None
    measured_goodput: float
    predicted_goodput: float | None
    seconds: float
    note: str

    @property
    def error(self) -> float | None:
        if self.predicted_req_s is None or not self.measured_req_s:
            return None
        return (self.predicted_req_s - self.measured_req_s) / self.measured_req_s

    @property
    def goodput_error(self) -> float | None:
        if self.predicted_goodput is None or not self.measured_goodput:
            return None
        return (self.predicted_goodput - self.measured_goodput) / self.measured_goodput


def describe(r: TrialResult) -> str:
    c = r.launched or r.config
    parts = [f"{k}={getattr(c, k)}" for k in KNOBS if getattr(c, k) is not None]
    if c.speculative_method:
        parts.append(f"spec={c.speculative_method}:{c.num_speculative_tokens}")
    if Path(c.model).name != Path(r.config.model).name or "w4a16" in c.model:
        parts.append(f"model={Path(c.model).name}")
    return " ".join(parts) or "vLLM defaults"


def study_inputs(study: Study) -> tuple:
    workload, slos = load_workload(study.workload), parse_slos(study.slo)
    gpu, spec = GPUProfile.load(study.gpu), ModelSpec.from_config(shape_config(study.shape))
    results = trial_results(study)
    demand = Demand(workload, slos)
    observed = {}
    for r in results:
        obs = observe(r, demand, study.plan, load_seed(workload, r))
        observed[r.number] = replace(obs, config=replace(obs.config, model=weights_name(obs.config.model, study)))
    return demand, gpu, spec, results, observed


def weights_name(path: str, study: Study) -> str:
    """The studies served synthetic models of one shape from different folders (/tmp/sf/model, /tmp/svg6-model,
    /tmp/models/llama-3-8b): the engine family is named by the shape, the 4-bit variant apart."""
    return study.shape + ("-w4a16" if "w4a16" in Path(path).name else "")


def predict_all(
    study: Study, cal: Calibration, results: list[TrialResult], observed: dict[int, ObservedTrial]
) -> list[Row]:
    rows = []
    for r in results:
        obs = observed[r.number]
        t0 = time.monotonic()
        p = predict(Candidate(obs.config, obs.engine), cal, obs.demand, study.plan, seed=obs.seed)
        secs = time.monotonic() - t0
        role = "calibration" if r.number in cal.trials else "predicted"
        if p.unseen:
            role = "not predicted"
        elif p.extrapolated and role == "predicted":
            role = "extrapolated"
        rows.append(
            Row(
                study.folder,
                r.number,
                role,
                describe(r),
                r.best_rate,
                p.capacity_req_s,
                r.goodput_req_s,
                p.goodput_req_s,
                secs,
                p.unseen or p.extrapolated or "",
            )
        )
    return rows


def stats(rows: list[Row]) -> str:
    from scipy.stats import spearmanr

    pairs = [(r.measured_req_s, r.predicted_req_s) for r in rows if r.error is not None]
    if not pairs:
        return "n=0"
    errs = [abs(r.error) for r in rows if r.error is not None]
    gerrs = [abs(r.goodput_error) for r in rows if r.goodput_error is not None]
    rho = spearmanr([m for m, _ in pairs], [p for _, p in pairs]).statistic if len(pairs) > 2 else float("nan")
    bias = statistics.median(r.error for r in rows if r.error is not None)
    return (
        f"n={len(pairs)} capacity |err| median {100 * statistics.median(errs):.1f} % worst {100 * max(errs):.1f} % "
        f"(median signed {100 * bias:+.1f} %), Spearman {rho:.2f}; goodput |err| median "
        f"{100 * statistics.median(gerrs):.1f} % worst {100 * max(gerrs):.1f} %"
    )


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


def cross_study(h200: tuple[Calibration, tuple], a30: tuple, study: Study, lines: list[str]) -> list[Row]:
    """The A30-memory study predicted from the native study's defaults: same H200, same vLLM."""
    cal, _ = h200
    _, _, _, results, observed = a30
    rows = predict_all(study, cal, results, observed)
    rows = [
        Row(
            "a30-from-h200-defaults",
            r.trial,
            "extrapolated" if r.role == "extrapolated" else r.role,
            r.config,
            r.measured_req_s,
            r.predicted_req_s,
            r.measured_goodput,
            r.predicted_goodput,
            r.seconds,
            r.note,
        )
        for r in rows
    ]
    lines.append(
        "## h200-llama-3-8b-a30 predicted from h200-llama-3-8b-h200's defaults (same GPU and vLLM; "
        "A30 memory: 48-110k KV tokens instead of 0.8-1.9M)"
    )
    lines.append("  same family, same KV dtype:  " + stats([r for r in rows if r.role == "predicted"]))
    lines.append(
        "  same family, any KV dtype:   " + stats([r for r in rows if r.role in ("predicted", "extrapolated")])
    )
    return rows


def pooled(machine: str, done: dict[str, tuple[Calibration, tuple]], evaluations: int, lines: list[str]) -> list[Row]:
    """One calibration on the defaults of every study of the machine (one engine family: same GPU, vLLM and
    weights; chat and longdoc alike), predicting all their configurations: a calibration kept across studies."""
    chosen = [s for s in STUDIES if s.machine == machine and s.folder in done]
    if len(chosen) < 2:
        return []
    _, gpu, spec, _, _ = done[chosen[0].folder][1]
    bases = []
    for s in chosen:
        _, _, _, results, observed = done[s.folder][1]
        bases.append(observed[next(r for r in results if r.is_baseline).number])
    t0 = time.monotonic()
    cal = calibrate(bases, spec, gpu, max_evaluations=evaluations)
    secs = time.monotonic() - t0
    rows: list[Row] = []
    for s in chosen:
        _, _, _, results, observed = done[s.folder][1]
        baselines = {r.number for r in results if r.is_baseline}
        for r in predict_all(s, cal, results, observed):
            role = "calibration" if r.trial in baselines else r.role
            rows.append(
                Row(
                    f"{machine.lower()}-pooled:{s.folder}",
                    r.trial,
                    role,
                    r.config,
                    r.measured_req_s,
                    r.predicted_req_s,
                    r.measured_goodput,
                    r.predicted_goodput,
                    r.seconds,
                    r.note,
                )
            )
    lines.append(
        f"## {machine}: one calibration on the defaults of all {len(chosen)} studies ({secs:.0f} s; costs "
        f"{json.dumps({k: float(f'{v:.3g}') for k, v in cal.costs.to_dict().items()})}), every other "
        "configuration of those studies predicted"
    )
    lines.append("  same family, same KV dtype:  " + stats([r for r in rows if r.role == "predicted"]))
    lines.append(
        "  same family, any KV dtype:   " + stats([r for r in rows if r.role in ("predicted", "extrapolated")])
    )
    return rows


def across_studies(machine: str, done: dict[str, tuple[Calibration, tuple]], lines: list[str]) -> None:
    """The same configuration measured in two studies of the machine (other days, other servers)."""
    seen: dict[str, list[tuple[str, int, float]]] = {}
    for folder, (_, inputs) in done.items():
        if next(s for s in STUDIES if s.folder == folder).machine != machine:
            continue
        for r in inputs[3]:
            if r.best_rate:
                seen.setdefault(describe(r), []).append((folder, r.number, r.best_rate))
    for conf, where in seen.items():
        if len({f for f, _, _ in where}) > 1:
            caps = [c for _, _, c in where]
            lines.append(
                f"  {conf}: {[(f, n, round(c, 1)) for f, n, c in where]} "
                f"(max−min {100 * (max(caps) - min(caps)) / statistics.mean(caps):.0f} % of the mean)"
            )


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
