"""``tune init``: write a commented slotune.yaml, validated by the same reader ``tune`` uses."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadtest.workload import load_workload
from loadtest.writable import check_output_file
from tuner.budget.gpu import GPUProfile
from tuner.errors import UsageError
from tuner.inputs import check_model_dir
from tuner.settings.fields import check_setting
from tuner.settings.project import read_project_file, render_project_file


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model directory")
    p.add_argument("--gpu", required=True, help="GPU profile name or YAML file")
    p.add_argument("--slo", default="ttft_p95=2s", help="SLOs (default ttft_p95=2s)")
    p.add_argument("--workload", default="chat")
    p.add_argument("--out", default="slotune.yaml", help="file to write (default ./slotune.yaml)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")


def run(args: argparse.Namespace) -> int:
    path = Path(args.out)
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    check_output_file(path, "--out")
    values = {k: check_setting(k, getattr(args, k)) for k in ("model", "gpu", "slo", "workload")}
    check_model_dir(values["model"])
    GPUProfile.load(values["gpu"])
    load_workload(values["workload"])
    values["model"] = str(Path(values["model"]).resolve())
    path.write_text(render_project_file(values))
    read_project_file(path)  # the file we wrote must pass our own reader
    print(f"wrote {path}; run `tune` in {path.parent.resolve()} (flags override the file)")
    return 0
