"""Write a launch.sh that starts one trial of a vLLM-CPU study, not its winner, for a cross-check under vLLM's own
benchmark client (scripts/cpu-crosscheck.sh's TRIAL=N). The script is rendered the way the study's own launch.sh is
(launch.script, the cpu profile's server niceness), from the trial's stored configuration; best.json is copied beside it
so the check reads the study's model, workload and SLO. The study folder is only read.

    python bench/trial_launch.py STUDY_DIR TRIAL OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import optuna

from launch.script import write_launch_script
from launch.vllm_info import probe_vllm
from tuner.search.study import STUDY_NAME, results_of
from tuner.trial.context import CPU_SERVER_NICE
from tuner.trial.result import TrialResult


def stored_trial(study_db: Path, number: int) -> TrialResult:
    """Trial ``number``'s stored result, read from a copy of ``study_db`` (the committed file is never opened)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "study.db"
        shutil.copyfile(study_db, copy)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.load_study(study_name=STUDY_NAME, storage=f"sqlite:///{copy}")
        results = {r.number: r for r in results_of(study)}
    if number not in results:
        sys.exit(f"trial_launch: {study_db} has no trial {number}; stored trials: {sorted(results)}")
    return results[number]


def write_trial_launch(study: Path, number: int, out: Path, vllm_python: str | None = None) -> TrialResult:
    """out/launch.sh starting trial ``number`` of ``study`` with ``vllm_python`` (default: the study's), best.json
    beside it; the trial."""
    best = json.loads((study / "best.json").read_text())
    if best["gpu"]["profile"] != "cpu":
        sys.exit(
            f"trial_launch: {study} is a {best['gpu']['profile']} study; its servers pin their KV cache: "
            "use scripts/gpu/h200-crosscheck.sh"
        )
    trial = stored_trial(study / "study.db", number)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(study / "best.json", out / "best.json")
    write_launch_script(
        out / "launch.sh",
        trial.config,
        probe_vllm(vllm_python or best["vllm"]["python"]),
        fingerprint=best["model"]["fingerprint"],
        model_dir=trial.config.model,
        note=f"slotune: trial {trial.number} of {study} (not its winner), served for a cross-check",
        nice=CPU_SERVER_NICE,
    )
    return trial


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path)
    ap.add_argument("trial", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--vllm-python", help="interpreter whose vLLM serves it (default: the study's)")
    args = ap.parse_args()
    trial = write_trial_launch(args.study, args.trial, args.out, args.vllm_python)
    print(f"trial_launch: {args.out / 'launch.sh'} serves trial {trial.number}: {trial.config.to_dict()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
