"""Server faults over a real loopback socket through the real aiohttp transport.

A small asyncio server stands in for a misbehaving server (selected by the request's ``model``);
the code under test is the load generator's own HTTP path and failure accounting.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import struct

import pytest

from loadtest.lengths import LengthDist
from loadtest.runner import LoadSpec, run_load_async
from loadtest.workload import Workload

WL = Workload("t", LengthDist("fixed", 4, 4), LengthDist("fixed", 3, 3))


def _event(k: int, usage: bool = True) -> bytes:
    obj: dict[str, object] = {"choices": [{"index": 0, "text": " w"}]}
    if usage:
        obj["usage"] = {"prompt_tokens": 4, "completion_tokens": k, "total_tokens": 4 + k}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
            mode = json.loads(await reader.readexactly(length))["model"]
            if mode == "close_early":
                writer.close()
                return
            if mode == "http500":
                writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\nboom")
                continue
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            if mode == "hang":
                await asyncio.sleep(30)
            if mode == "malformed":
                writer.write(_chunk(_event(1)) + _chunk(b'data: {"choices": [\n\n'))
            else:
                usage = mode != "nousage"
                for k in (1, 2, 3):
                    writer.write(_chunk(_event(k, usage)))
                    await writer.drain()
                    await asyncio.sleep(0.002)
            if mode == "cut":
                writer.close()  # no usage, no [DONE], no terminating chunk
                return
            if mode == "reset":  # a TCP reset mid-stream (seen from vLLM on the H200 at ~125 req/s)
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            if mode == "badframe":
                writer.write(b"zz\r\nnot a chunk size\r\n")
                await writer.drain()
                writer.close()
                return
            tail = b"data: [DONE]\n\n"
            if mode not in ("nousage", "malformed"):
                tail = b'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}}\n\n' + tail
            writer.write(_chunk(tail) + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
        writer.close()


async def _run(mode: str, timeout_s: float = 5.0):  # type: ignore[no-untyped-def]
    server = await asyncio.start_server(_handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        spec = LoadSpec(
            url=f"http://127.0.0.1:{port}",
            model=mode,
            workload=WL,
            concurrency=1,
            requests=3,
            scrape_server_metrics=False,
            probe=False,
            timeout_s=timeout_s,
        )
        return await run_load_async(spec)
    finally:
        server.close()


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("cut", "stream_cut"),
        ("badframe", "stream_cut"),
        ("malformed", "malformed_chunk"),
        ("http500", "http_500"),
        ("nousage", "no_usage"),
        ("close_early", "connection_error"),
        ("reset", "stream_cut"),
    ],
)
def test_fault_is_counted_by_reason(mode: str, reason: str) -> None:
    r = asyncio.run(_run(mode))
    assert r.requests_ok == 0 and r.failures == {reason: 3}, r.failures


def test_hang_times_out() -> None:
    r = asyncio.run(_run("hang", timeout_s=0.3))
    assert r.failures == {"timeout": 3}


def test_good_stream_over_a_socket() -> None:
    r = asyncio.run(_run("ok"))
    assert r.requests_ok == 3 and r.output_tokens == 9 and r.token_counts_exact
    # the server's 2 ms pauses are seen, and not much more: its timers only fire late (p50 2.2-7.3 ms over 15
    # runs at load ~6 on the 2-core machine); test_timing_socket.py measures the error against server stamps
    assert r.itl_ms.p50 is not None and 1.0 <= r.itl_ms.p50 <= 20.0


def test_a_reset_connection_leaves_no_unretrieved_future(caplog: pytest.LogCaptureFixture) -> None:
    # watching aiohttp's lazily created `closed` future made it ours: a reset set an exception on it that
    # nobody read, and asyncio logged "Future exception was never retrieved" into the tuner's console
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        r = asyncio.run(_run("reset"))
        gc.collect()
    assert r.failures == {"stream_cut": 3}
    assert not [m for m in caplog.messages if "never retrieved" in m], caplog.messages
