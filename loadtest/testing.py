"""Stand-ins for timing tests: a scripted clock and a fake OpenAI server (like httpx's MockTransport).

Only the load generator's own timing tests use these; everything else runs against real vLLM.

    clock = ScriptedClock()
    transport = FakeTransport(lambda req: FakeResponse.stream(clock, [(0.05, 1), (0.01, 1)]), clock)

Reading the next line of a :class:`FakeResponse` advances the scripted clock by that line's delay,
so a test knows every timestamp exactly and runs without sleeping.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


class ScriptedClock:
    """Virtual time: ``now`` is whatever the script has advanced it to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt

    async def sleep_until(self, t: float) -> None:
        if t > self.t:
            self.t = t
        await asyncio.sleep(0)


@dataclass(frozen=True)
class FakeRequest:
    method: str
    url: str
    body: dict[str, Any] | None


@dataclass
class FakeResponse:
    """A scripted answer: ``status`` and body ``lines``, each read after ``delay`` seconds."""

    status: int = 200
    lines_: Sequence[tuple[float, bytes]] = ()
    clock: ScriptedClock | None = None
    error: BaseException | None = None  # raised after the scripted lines (e.g. ConnectionResetError)
    read_log: list[float] = field(default_factory=list)

    async def lines(self) -> AsyncIterator[bytes]:
        for delay, line in self.lines_:
            if self.clock is not None:
                self.clock.advance(delay)
            await asyncio.sleep(0)
            yield line
        if self.error is not None:
            raise self.error

    async def read(self) -> bytes:
        return b"".join(line for _, line in self.lines_)

    @classmethod
    def stream(
        cls,
        clock: ScriptedClock | None,
        events: Sequence[tuple[float, int]],
        *,
        chat: bool = False,
        prompt_tokens: int = 8,
        continuous_usage: bool = True,
        final_usage: bool = True,
        done: bool = True,
        tail_delay: float = 0.0,
    ) -> FakeResponse:
        """An SSE stream: one event per ``(delay_s, tokens)``, then usage and [DONE] after ``tail_delay``."""
        lines: list[tuple[float, bytes]] = []
        total = 0
        for delay, k in events:
            total += k
            text = " ".join(["w1"] * k)
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            obj: dict[str, Any] = {"id": "x", "choices": [choice]}
            if continuous_usage:
                obj["usage"] = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": total,
                    "total_tokens": prompt_tokens + total,
                }
            lines.append((delay, b"data: " + json.dumps(obj).encode() + b"\n"))
            lines.append((0.0, b"\n"))
        if final_usage:
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": total,
                "total_tokens": prompt_tokens + total,
            }
            lines.append(
                (
                    tail_delay,
                    b"data: " + json.dumps({"id": "x", "choices": [], "usage": usage}).encode() + b"\n",
                )
            )
            tail_delay = 0.0
        if done:
            lines.append((tail_delay, b"data: [DONE]\n"))
        return cls(200, lines, clock)


Handler = Callable[[FakeRequest], FakeResponse]


class FakeTransport:
    """A :class:`loadtest.transport.Transport` answering from ``handler``; records every request."""

    def __init__(self, handler: Handler, clock: ScriptedClock | None = None) -> None:
        self.handler = handler
        self.clock = clock
        self.requests: list[FakeRequest] = []

    @asynccontextmanager
    async def request(self, method: str, url: str, body: bytes | None, timeout_s: float) -> AsyncIterator[FakeResponse]:
        req = FakeRequest(method, url, json.loads(body) if body else None)
        self.requests.append(req)
        resp = self.handler(req)
        if resp.clock is None:
            resp.clock = self.clock
        yield resp
