"""The rows of the offline validation (bench/perfmodel_validation.py): one per measured configuration, with
its measured and predicted capacity and goodput, and the figures over a set of rows."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_studies import Study, load_seed, trial_results  # noqa: E402

from loadtest.slo import parse_slos  # noqa: E402
from loadtest.workload import load_workload  # noqa: E402
from perfmodel.observed import ObservedTrial, observe  # noqa: E402
from perfmodel.rank import Calibration, Candidate, predict  # noqa: E402
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
        p = predict(Candidate(obs.config, obs.engine), cal, obs.demand, study.plan, seed=obs.seed, extrapolate_kv=True)
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
