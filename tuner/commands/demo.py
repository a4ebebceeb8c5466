"""``tune demo``: the main job on an embedded default — a tiny random-weight Llama, real vLLM on the
CPU, 3 trials under ttft_p95=2s on the chat workload. Needs no GPU and no download."""

from __future__ import annotations

import argparse
import sys


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo", help="folder for the model and the study (default: ./demo)")
    p.add_argument("--trials", default=3, help="total trials (default 3)")
    p.add_argument("--slo", default="ttft_p95=2s", help="SLOs (default ttft_p95=2s)")
    p.add_argument("--vllm-python", default=sys.executable, help="interpreter with vLLM (default: this one)")
    p.add_argument("--resume", action="store_true", help="continue an earlier demo study")


def run(args: argparse.Namespace) -> int:
    from loadtest.writable import check_output_dir
    from tuner.commands.tune import print_outcome
    from tuner.inputs import load_inputs
    from tuner.out_dir import claimed
    from tuner.pipeline import check_resume, storage_url, tune
    from tuner.settings import resolve
    from tuner.study import check_storage
    from tuner.synthetic import write_model

    out = check_output_dir(args.out, "--out")
    model = out / "tiny-llama"
    settings = resolve(
        {},
        {
            "model": str(model),
            "gpu": "cpu",
            "slo": args.slo,
            "workload": "chat",
            "trials": args.trials,
            "out": str(out / "study"),
            "vllm_python": args.vllm_python,
            "resume": args.resume or None,
        },
    )
    if not (model / "config.json").is_file():
        print(f"writing a tiny random-weight Llama to {model}", flush=True)
        write_model(model, "llama-tiny")
    with claimed(settings.out_dir()):
        check_storage(storage_url(settings), resume=settings.resume)
        inputs = load_inputs(settings)
        check_resume(inputs)
        outcome = tune(inputs)
    print_outcome(outcome.out, outcome.summary, settings.slo, outcome.confirmation, outcome.headline)
    return outcome.exit_code
