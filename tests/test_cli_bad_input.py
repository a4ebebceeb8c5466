"""Bad input: one line naming the value and the valid choices, exit 2, no traceback, nothing started."""

import subprocess
import sys
import venv

import pytest

from tuner.cli import main


@pytest.fixture()
def model(tmp_path):
    from tuner.synthetic import write_model

    return write_model(tmp_path / "m", "llama-tiny", weights=False)


def run_cli(args, capsys):
    code = main(args)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["--model", "/nonexistent/m", "--gpu", "cpu", "--slo", "ttft_p95=2s"],
            "--model /nonexistent/m: no such directory",
        ),
        (["--gpu", "warp9", "--slo", "ttft_p95=2s"], "warp9"),
        (["--gpu", "cpu", "--slo", "ttft_p95=fast"], "malformed SLO 'ttft_p95=fast'"),
        (["--gpu", "cpu", "--slo", "foo=1s"], "unknown SLO metric 'foo'"),
        (["--gpu", "cpu", "--slo", "ttft_p95=2s", "--workload", "nosuch"], "nosuch"),
        (["--gpu", "cpu"], "missing --slo"),
        (["--gpu", "cpu", "--slo", "ttft_p95=2s", "--confirm", "-1"], "--confirm '-1': must be a whole number"),
        (["--gpu", "cpu", "--slo", "ttft_p95=2s", "--try-first", "ngram"], "--try-first 'ngram': 'ngram' is not KNOB"),
        (["--gpu", "cpu", "--slo", "ttft_p95=2s", "--try-first", "max_num_seqs=3"], "max_num_seqs=3: not a value"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle, model, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    if "--model" not in args:
        args = ["--model", str(model), *args]
    code, err = run_cli(args, capsys)
    assert code == 2, err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_vllm_python_without_vllm(model, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = tmp_path / "novllm"
    venv.create(env, with_pip=False)
    code, err = run_cli(
        ["--model", str(model), "--gpu", "cpu", "--slo", "ttft_p95=2s", "--vllm-python", str(env / "bin" / "python")],
        capsys,
    )
    assert code == 2 and "vllm" in err.lower() and str(env / "bin" / "python") in err and "Traceback" not in err


def test_tune_and_its_subcommands_have_help():
    proc = subprocess.run([sys.executable, "-m", "tuner.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--certify" in proc.stdout and "over 5 %)" in proc.stdout, proc.stderr
    for sub in ("budget", "quantize", "retune", "init", "demo", "make-model"):
        proc = subprocess.run([sys.executable, "-m", "tuner.cli", sub, "--help"], capture_output=True, text=True)
        assert proc.returncode == 0 and "usage: tune " + sub in proc.stdout, (sub, proc.stderr)


@pytest.mark.vllm
def test_gpu_profile_must_match_the_vllm_build(model, capsys, tmp_path, monkeypatch, vllm_python):
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(
        ["--model", str(model), "--gpu", "a30", "--slo", "ttft_p95=2s", "--vllm-python", vllm_python], capsys
    )
    assert code == 2 and "--gpu a30 does not match" in err and "CPU build" in err
