"""A tiny OpenAI-style streaming server with injected, known delays (raw asyncio, for benchmarks).

POST /v1/completions streams ``max_tokens`` tokens: the first ``ttft_ms`` after the request is
read, then one every ``tpot_ms`` (0 = as fast as possible), with running usage on every chunk,
the final usage and [DONE]. It stamps, per request, when it read the request, wrote the first token,
wrote each token (just before the write) and wrote [DONE] (``time.perf_counter``, the same CLOCK_MONOTONIC
the client reads) and serves them at GET /stamps; GET /peak gives the most connections it held open at once.
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from typing import Any


class FakeServer:
    def __init__(self, ttft_ms: float, tpot_ms: float) -> None:
        self.ttft, self.tpot = ttft_ms / 1000, tpot_ms / 1000
        self.stamps: list[dict[str, Any]] = []
        self.open = 0
        self.peak = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                got = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for h in lines[1:]:
                    if h.lower().startswith("content-length:"):
                        length = int(h.split(":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if method == "GET":
                    await self._get(writer, path)
                    continue
                await self._stream(writer, json.loads(body), got)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def _get(self, writer: asyncio.StreamWriter, path: str) -> None:
        if path == "/stamps":
            data, self.stamps = json.dumps(self.stamps).encode(), []
        elif path == "/peak":
            data = json.dumps({"peak": self.peak}).encode()
            self.peak = self.open
        else:
            writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data)
        )

    async def _stream(self, writer: asyncio.StreamWriter, req: dict[str, Any], got: float) -> None:
        n = int(req.get("max_tokens") or 16)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(self.ttft)
        first = 0.0
        written: list[float] = []
        for k in range(1, n + 1):
            if k > 1 and self.tpot:
                await asyncio.sleep(self.tpot)
            ev = (
                b'data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":" w7"}],'
                b'"usage":{"prompt_tokens":16,"completion_tokens":%d,"total_tokens":%d}}\n\n' % (k, 16 + k)
            )
            written.append(time.perf_counter())  # before the write: the client cannot read it any earlier
            writer.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            if k == 1:
                first = written[0]
            await writer.drain()
        tail = (
            b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":16,"completion_tokens":%d,'
            b'"total_tokens":%d}}\n\ndata: [DONE]\n\n' % (n, 16 + n)
        )
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(tail), tail))
        done = time.perf_counter()
        await writer.drain()
        key = str(req.get("prompt", ""))[:80]
        self.stamps.append({"key": key, "got": got, "first": first, "done": done, "n": n, "tokens": written})


def serve(port_out: Any, ttft_ms: float, tpot_ms: float) -> None:
    """Process entry point: serve on a free loopback port, sent back through ``port_out`` (a Queue)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def main() -> None:
        fs = FakeServer(ttft_ms, tpot_ms)
        server = await asyncio.start_server(fs.handle, "127.0.0.1", 0, backlog=4096)
        port_out.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
