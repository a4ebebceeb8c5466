"""``tune budget``: text and JSON output, and bad input -> one line on stderr, exit 2."""

from __future__ import annotations

import json

import pytest
from configs import LLAMA_3_8B

from tuner.cli import main


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_8B))
    return tmp_path


def test_json_has_the_contract_keys(model_dir, capsys) -> None:
    rc = main(
        [
            "budget",
            "--model",
            str(model_dir),
            "--gpu",
            "h200",
            "--gpu-memory-utilization",
            "0.9",
            "--max-model-len",
            "8192",
            "--kv-cache-dtype",
            "fp8",
            "--vllm-version",
            "0.26.0",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["feasible"] is True and out["reasons"] == []
    for key in ("kv_bytes_per_token", "weight_bytes", "kv_cache_bytes", "kv_tokens", "max_concurrency"):
        assert key in out
    assert out["kv_bytes_per_token"] == 32 * 2 * 8 * 128  # fp8


def test_text_output_is_readable(model_dir, capsys) -> None:
    assert (
        main(
            ["budget", "--model", str(model_dir), "--gpu", "a10", "--max-model-len", "8192", "--vllm-version", "0.26.0"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "FEASIBLE" in out and "KV tokens" in out and "largest max_model_len that fits" in out


def test_infeasible_prints_the_reason(model_dir, capsys) -> None:
    assert (
        main(
            [
                "budget",
                "--model",
                str(model_dir),
                "--gpu",
                "l4",
                "--max-model-len",
                "8192",
                "--gpu-memory-utilization",
                "0.5",
                "--vllm-version",
                "0.26.0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "NOT FEASIBLE" in out and "reason" in out


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--gpu", "nosuchgpu"], "unknown GPU profile 'nosuchgpu'"),
        (["--gpu", "h200", "--model", "/nonexistent/dir"], "no config.json"),
    ],
)
def test_bad_input_exits_2_with_one_line(model_dir, capsys, args, text) -> None:
    argv = ["budget", "--model", str(model_dir), *args] if "--model" not in args else ["budget", *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_config_field_exits_2(tmp_path, capsys) -> None:
    cfg = {k: v for k, v in LLAMA_3_8B.items() if k != "hidden_size"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert main(["budget", "--model", str(tmp_path), "--gpu", "h200"]) == 2
    assert "'hidden_size'" in capsys.readouterr().err
