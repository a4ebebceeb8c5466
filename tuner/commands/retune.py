"""``tune retune``: re-verify a finished study; re-tune (warm-started) when the model or vLLM changed.

Exit 0 when the SLO holds at (1 − tolerance) × the tuned rate, 1 on a regression, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tuner.errors import UsageError
from tuner.out_dir import claimed
from tuner.settings import rules
from tuner.settings.fields import FIELDS
from tuner.settings.project import find_project_file, read_project_file
from tuner.settings.rules import flag_type
from tuner.settings.tune_settings import resolve


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", help="study folder with best.json (default: the out folder of ./slotune.yaml)")
    p.add_argument(
        "--trials", type=flag_type(int, FIELDS["trials"].rule), help="trials for a re-tune (default: the study's)"
    )
    p.add_argument(
        "--tolerance",
        type=flag_type(float, rules.Rule("a fraction ≥ 0 and < 1", "0.1", low=0, high=0.999999)),
        default=0.1,
        help="allowed capacity drop: the SLO must hold at (1 - tolerance) x the tuned rate (default 0.1 = 10%%)",
    )
    p.add_argument("--vllm-python", help="interpreter whose vLLM is launched (default: the study's)")
    p.add_argument(
        "--soak-seconds",
        type=flag_type(float, FIELDS["soak_seconds"].rule),
        help="seconds of the verification soak, and of a re-tune's certifying soaks (default: the study's)",
    )
    p.add_argument("--config", help="project file (default ./slotune.yaml)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _study_dir(args: argparse.Namespace) -> Path:
    if args.study:
        return Path(args.study)
    path = find_project_file(args.config)
    if path is None:
        raise UsageError("no --study given and no slotune.yaml here; pass --study DIR")
    return resolve(read_project_file(path), {}, source=str(path)).out_dir()


def run(args: argparse.Namespace) -> int:
    from tuner.retune import retune  # Optuna and pandas load only once a re-check starts

    def say(msg: str) -> None:
        print(f"[retune] {msg}", file=sys.stderr, flush=True)

    study = _study_dir(args)
    if not study.is_dir():
        raise UsageError(f"--study {study}: no such folder; point --study at a folder written by `tune`")
    with claimed(study, "--study"):
        result = retune(
            study,
            trials=args.trials,
            tolerance=args.tolerance,
            vllm_python=args.vllm_python,
            soak_seconds=args.soak_seconds,
            progress=say,
        )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        what = "model changed" if result.model_changed else "model unchanged"
        stack = ("versions changed: " + ", ".join(result.changes)) if result.versions_changed else "versions unchanged"
        verdict = "REGRESSION" if result.regression else "OK"
        print(f"{verdict}: {what}, {stack}; action: {result.action}; launch.sh updated: {result.launch_sh_updated}")
    return 1 if result.regression else 0
