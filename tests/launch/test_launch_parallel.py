"""A parallel layout in launch.sh and the Docker backend: the argv, NCCL env and GPU check, rendered and run
with a stand-in interpreter (no GPU, no vLLM start); one GPU stays as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.command import build_command
from launch.config import ServeConfig
from launch.docker_backend import container_spec
from launch.errors import LaunchInputError
from launch.script import docker_run_command, render_launch_script, write_launch_script

TP2_DP2 = ServeConfig(model="/models/llama", tensor_parallel_size=2, data_parallel_size=2, max_num_seqs=64)


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    """Prints the server argv and the GPU env instead of starting vLLM; reports the tuned version."""
    path = tmp_path / "fakepy"
    path.write_text(f"""#!/bin/sh
if [ "$1" = "-m" ]; then exec {sys.executable} -c 'import json, os, sys
print("ARGV " + json.dumps(sys.argv[1:]))
print("ENV " + json.dumps({{k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE")}}))' "$@"; fi
if [ "$1" = "-" ] && [ "$#" = 1 ]; then echo 0.32.0; exit 0; fi
exec {sys.executable} "$@"
""")
    path.chmod(0o755)
    return path


def _run(script: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], "VERIFY_MODEL": "0", "PORT": "18431", **env}
    return subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, timeout=60)


def test_argv_carries_the_layout_and_nccl_env(make_info) -> None:
    for version in ("0.26.0", "0.32.0", "0.33.0"):
        argv, env = build_command(TP2_DP2, make_info(version), host="h", port=1)
        assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
        assert argv[argv.index("--data-parallel-size") + 1] == "2"
        assert env["NCCL_NVLS_ENABLE"] == "0"
    one_argv, one_env = build_command(ServeConfig(model="/m"), make_info("0.32.0"), host="h", port=1)
    assert "NCCL_NVLS_ENABLE" not in one_env and "--data-parallel-size" not in one_argv
    cpu = build_command(TP2_DP2, make_info("0.32.0", platform="cpu"), host="h", port=1)[1]
    assert "NCCL_NVLS_ENABLE" not in cpu  # NCCL only on CUDA


def test_a_vllm_without_the_flag_is_refused_before_launch(make_info) -> None:
    from dataclasses import replace

    info = make_info("0.32.0")
    old = replace(info, flags=info.flags - {"--data-parallel-size"})
    with pytest.raises(LaunchInputError, match="has no flag --data-parallel-size"):
        build_command(TP2_DP2, old, host="h", port=1)


def test_one_gpu_script_is_unchanged(make_info) -> None:
    text = render_launch_script(ServeConfig(model="m"), make_info("0.32.0"), fingerprint="x", model_dir="/m")
    assert "GPUS_NEEDED" not in text and "NCCL" not in text and "CUDA_VISIBLE_DEVICES" not in text


def test_launch_sh_starts_the_layout_as_measured(make_info, fake_python: Path, tmp_path: Path) -> None:
    info = make_info("0.32.0", python=str(fake_python))
    script = write_launch_script(tmp_path / "launch.sh", TP2_DP2, info, fingerprint="x", model_dir="/models/llama")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    r = _run(script)
    assert r.returncode == 0, r.stderr
    argv = json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("ARGV "))[5:])
    env = json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("ENV "))[4:])
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--data-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-num-seqs") + 1] == "64" and argv[argv.index("--port") + 1] == "18431"
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "NCCL_NVLS_ENABLE": "0"}
    r = _run(script, CUDA_VISIBLE_DEVICES="4,5,6,7")
    assert r.returncode == 0 and '"CUDA_VISIBLE_DEVICES": "4,5,6,7"' in r.stdout


def test_launch_sh_refuses_a_group_of_the_wrong_size(make_info, fake_python: Path, tmp_path: Path) -> None:
    info = make_info("0.32.0", python=str(fake_python))
    script = write_launch_script(tmp_path / "launch.sh", TP2_DP2, info, fingerprint="x", model_dir="/models/llama")
    r = _run(script, CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 2 and "ARGV" not in r.stdout
    assert "CUDA_VISIBLE_DEVICES=0,1 lists 2 GPUs but this layout (tensor parallel 2 x data parallel 2) needs 4" in (
        r.stderr
    )
    r = _run(script, FORCE="0", VLLM_PYTHON=str(tmp_path / "none"))  # the checks of today still come first
    assert r.returncode == 2 and "cannot report a vLLM version" in r.stderr


def test_docker_starts_exactly_the_layouts_gpus(make_info) -> None:
    info = make_info("0.32.0")
    line = docker_run_command(TP2_DP2, info)
    assert "--gpus 4" in line and "NCCL_NVLS_ENABLE=0" in line and "--data-parallel-size 2" in line
    assert "--gpus all" in docker_run_command(ServeConfig(model="/m"), info)
    spec = container_spec(TP2_DP2, info, host="127.0.0.1", port=8123)
    assert spec["device_requests"][0]["count"] == 4 and spec["environment"]["NCCL_NVLS_ENABLE"] == "0"
    pinned = container_spec(TP2_DP2.with_env(CUDA_VISIBLE_DEVICES="4,5,6,7"), info, host="h", port=1)
    assert pinned["device_requests"][0]["device_ids"] == ["4", "5", "6", "7"]
    assert "CUDA_VISIBLE_DEVICES" not in pinned["environment"]  # the container numbers its GPUs from 0
    with pytest.raises(LaunchInputError, match="needs 4 GPUs; pass 4 device ids"):
        container_spec(TP2_DP2, info, host="h", port=1, gpus=["0", "1"])
