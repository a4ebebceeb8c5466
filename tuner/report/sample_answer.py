"""A sample answer of the winner: one chat question to a fresh server of the winning configuration, so the
report shows what the served model says (a real model's answer; a random-weight model's is noise).

Greedy decoding (temperature 0), at most ``MAX_TOKENS`` tokens, through the OpenAI-compatible chat endpoint
(the model's own chat template). Costs one server start (~30–60 s on vLLM-CPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from tuner.certify.soak import fresh_server
from tuner.trial.context import TrialContext
from tuner.trial.result import TrialResult

QUESTION = "What is the capital of France? Answer in one sentence."
MAX_TOKENS = 48
STUDY_ATTR = "sample_answer"


@dataclass(frozen=True)
class SampleAnswer:
    trial: int
    question: str
    answer: str
    finish_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ask(url: str, model: str, question: str, client: httpx.Client) -> tuple[str, str | None]:
    """The server's greedy chat answer to ``question`` and its finish reason."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": question}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
    }
    reply = client.post(f"{url}/v1/chat/completions", json=body, timeout=120.0)
    reply.raise_for_status()
    choice = reply.json()["choices"][0]
    return str(choice["message"]["content"]).strip(), choice.get("finish_reason")


def sample_answer(
    best: TrialResult,
    ctx: TrialContext,
    progress: Callable[[str], None],
    question: str = QUESTION,
    device: str | None = None,
) -> SampleAnswer:
    """Start the winner on a fresh server, ask ``question``, stop it."""
    with fresh_server(best.config, ctx, f"sample-{best.number:03d}", progress, device) as server, httpx.Client() as c:
        answer, finish = ask(server.url, best.config.name, question, c)
    progress(f"sample answer of trial {best.number}: {question!r} -> {answer!r}")
    return SampleAnswer(best.number, question, answer, finish)
