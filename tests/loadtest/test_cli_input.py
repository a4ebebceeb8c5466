"""Bad input: one line, exit 2 (or 1 for an unreachable server, within 5 s); no traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.cli import main
from loadtest.errors import ServerUnreachable
from loadtest.runner import check_server


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


URL = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--rate", "0"], "--rate must be a positive"),
        (["--rate", "-3"], "--rate must be a positive"),
        (["--concurrency", "0"], "--concurrency must be ≥ 1"),
        (["--requests", "-5"], "--requests must be ≥ 1"),
        (["--duration", "0"], "--duration must be > 0"),
        (["--warmup", "-1"], "--warmup must be ≥ 0"),
        (["--output-tokens", "0"], "--output-tokens must be ≥ 1"),
        (["--arrival", "bursty"], "--arrival 'bursty' is unknown"),
        (["--rate", "5", "--burstiness", "0"], "--burstiness must be > 0"),
        (["--endpoint", "embeddings"], "--endpoint 'embeddings' is unknown"),
        (["--workload", "nope"], "unknown workload 'nope'"),
        (["--slo", "ttft_p95=fast"], "malformed SLO"),
    ],
)
def test_bad_values_exit_2(args: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", URL, "--model", "m", *args]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and err.count("\n") == 1


def test_rate_and_concurrency_together_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--url", URL, "--model", "m", "--rate", "1", "--concurrency", "2"])
    assert e.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_bad_workload_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "w.yaml"
    p.write_text("input_tokens: {dist: normal, mean: 5, min: 1, max: 9}\noutput_tokens: 3\n")
    assert main(["--url", URL, "--model", "m", "--workload", str(p)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "input_tokens.std" in err


def test_unreachable_url_fails_fast(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    assert main(["--url", url, "--model", "m", "--requests", "3"]) == 1
    assert time.monotonic() - t0 < 5.0
    err = capsys.readouterr().err
    assert "cannot reach" in err and url in err and "Traceback" not in err


def test_silent_server_and_bad_host_fail_within_the_timeout() -> None:
    with socket.socket() as silent:  # accepts TCP (backlog) but never answers HTTP
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        t0 = time.monotonic()
        with pytest.raises(ServerUnreachable, match="cannot reach"):
            check_server(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=1.0)
        assert time.monotonic() - t0 < 2.0
    with pytest.raises(ServerUnreachable):
        check_server("http://no-such-host.invalid:8000", timeout_s=2.0)


def test_import_is_light() -> None:
    code = (
        "import sys, loadtest, loadtest.cli, loadtest.runner, loadtest.metrics, loadtest.workload, "
        "loadtest.report, loadtest.prompts, loadtest.server_metrics, loadtest.testing\n"
        "bad = [m for m in ('torch', 'vllm', 'transformers') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]
    )
    assert r.returncode == 0, r.stdout + r.stderr
