"""One streamed request → one :class:`RequestRecord`. Every failure becomes a reason, never an exception.

The body asks for ``stream_options: {include_usage, continuous_usage_stats}``: vLLM (0.26 and 0.32)
then puts the running ``completion_tokens`` on every chunk, so each event's token count is exact.
Servers that ignore ``continuous_usage_stats`` still send the final usage; the metrics then know
the total exactly and spread it over the events (flagged ``token_counts_exact = False``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from loadtest import records as R
from loadtest.records import Chunk, RequestRecord
from loadtest.transport import Clock, Transport

_decode = json.JSONDecoder().decode  # on str: skips json.loads' per-call encoding sniffing


@dataclass(frozen=True)
class Prepared:
    """A request ready to send: its body already serialised (sending must be cheap)."""

    index: int
    body: bytes
    input_tokens: int | None
    output_tokens: int | None
    warmup: bool = False


def build_body(
    model: str,
    endpoint: str,
    prompt: str | None,
    messages: list[dict[str, str]] | None,
    max_tokens: int | None,
    *,
    ignore_eos: bool,
    continuous_usage: bool = True,
    temperature: float | None = None,
) -> bytes:
    """The JSON body of a streamed completions or chat-completions request."""
    body: dict[str, Any] = {"model": model, "stream": True, "stream_options": {"include_usage": True}}
    if continuous_usage:
        body["stream_options"]["continuous_usage_stats"] = True
    if endpoint == "chat":
        body["messages"] = messages if messages is not None else [{"role": "user", "content": prompt or ""}]
    else:
        if prompt is None and messages is not None:
            prompt = "\n".join(m.get("content", "") for m in messages)
        body["prompt"] = prompt or ""
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
        if ignore_eos:
            body["ignore_eos"] = True
    if temperature is not None:  # else the server's default sampling
        body["temperature"] = temperature
    return json.dumps(body, separators=(",", ":")).encode()


def _text_of(choice: Any) -> str:
    if not isinstance(choice, dict):
        return ""
    if "text" in choice:
        return choice.get("text") or ""
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return (delta.get("content") or "") + (delta.get("reasoning_content") or delta.get("reasoning") or "")
    return ""


async def send(
    transport: Transport,
    clock: Clock,
    url: str,
    req: Prepared,
    scheduled_at: float,
    timeout_s: float,
    chunks: list[Chunk] | None = None,
) -> RequestRecord:
    """Send one request and observe it; the record's failure is None only for a complete answer. ``chunks``: a list
    the token events are appended to as they arrive (a caller watching the request in flight)."""
    chunks = [] if chunks is None else chunks
    state: dict[str, Any] = {"status": None, "usage": None, "done": False}
    sent_at = clock.now()

    def record(failure: str | None, detail: str = "") -> RequestRecord:
        usage = state["usage"] or {}
        return RequestRecord(
            index=req.index,
            scheduled_at=scheduled_at,
            sent_at=sent_at,
            chunks=tuple(chunks),
            done_at=clock.now(),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            failure=failure,
            detail=detail[:500],
            planned_input_tokens=req.input_tokens,
            planned_output_tokens=req.output_tokens,
            warmup=req.warmup,
        )

    try:
        async with asyncio.timeout(timeout_s):
            return await _stream(transport, clock, url, req.body, timeout_s, chunks, state, record)
    except TimeoutError:
        return record(R.TIMEOUT, f"no complete answer within {timeout_s:g} s")
    except OSError as e:
        reason = R.STREAM_CUT if state["status"] is not None else R.CONNECTION
        return record(reason, f"{type(e).__name__}: {e}")


async def _stream(transport, clock, url, body, timeout_s, chunks, state, record):  # type: ignore[no-untyped-def]
    async with transport.request("POST", url, body, timeout_s) as resp:
        state["status"] = resp.status
        if resp.status != 200:
            text = (await resp.read()).decode("utf-8", "replace")
            return record(f"{R.HTTP_PREFIX}{resp.status}", text)
        prev = 0
        async for raw in resp.lines():
            if not raw.startswith(b"data:"):
                continue  # blank separators, comments, "event:" lines
            t = clock.now()
            data = raw[5:].strip()
            if data == b"[DONE]":
                state["done"] = True
                break
            try:
                obj = _decode(data.decode())
            except ValueError:
                return record(R.MALFORMED, data[:200].decode("utf-8", "replace"))
            if not isinstance(obj, dict):
                return record(R.MALFORMED, data[:200].decode("utf-8", "replace"))
            if "error" in obj:
                return record(R.SERVER_ERROR, json.dumps(obj["error"])[:500])
            choices = obj.get("choices")
            usage = obj.get("usage")
            if choices is None or not isinstance(choices, list) or (usage is not None and not isinstance(usage, dict)):
                return record(R.MALFORMED, data[:200].decode("utf-8", "replace"))
            if usage is not None:
                state["usage"] = usage
            if not choices:
                continue  # the final usage event
            ct = usage.get("completion_tokens") if usage else None
            if isinstance(ct, int):
                k = ct - prev
                prev = ct
                if k > 0:
                    chunks.append(Chunk(t, k))
            elif any(_text_of(c) for c in choices):
                chunks.append(Chunk(t, None))
    if not state["done"]:
        return record(R.STREAM_CUT, "the stream ended before [DONE]")
    usage = state["usage"]
    if not usage or not isinstance(usage.get("completion_tokens"), int):
        return record(R.NO_USAGE, "no usage in the stream; the server must honour stream_options.include_usage")
    if usage["completion_tokens"] <= 0 or not chunks:
        return record(R.NO_OUTPUT, "the answer had no output tokens")
    return record(None)
