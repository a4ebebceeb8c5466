"""The two seams of the load generator: the clock and the HTTP transport.

A :class:`Transport` has one method, ``request``: an async context manager yielding a
:class:`Response` whose body is read line by line. :class:`AiohttpTransport` is the real one
(aiohttp was measured cheaper per streamed request than httpx: see docs/loadtest.md);
``loadtest.testing.FakeTransport`` scripts a server for timing tests. Transports raise
``OSError`` (``ConnectionError``) for network failures so the client need not know the library.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol


class Clock(Protocol):
    """Monotonic seconds, and a way to wait for a point in time."""

    def now(self) -> float: ...

    async def sleep_until(self, t: float) -> None: ...


class MonotonicClock:
    """The real clock: ``time.perf_counter`` (CLOCK_MONOTONIC on Linux).

    ``sleep_until`` sleeps to ``SPIN_S`` before the deadline, then yields to the loop until it is
    reached: epoll timers round up to whole milliseconds, which alone would make sends ~1 ms late.
    """

    SPIN_S = 0.0015

    def now(self) -> float:
        return time.perf_counter()

    async def sleep_until(self, t: float) -> None:
        delay = t - time.perf_counter()
        if delay > self.SPIN_S:
            await asyncio.sleep(delay - self.SPIN_S)
        while time.perf_counter() < t:
            await asyncio.sleep(0)


class Response(Protocol):
    status: int

    def lines(self) -> AsyncIterator[bytes]: ...  # the body line by line, line ends optional

    async def read(self) -> bytes: ...


class Transport(Protocol):
    def request(
        self, method: str, url: str, body: bytes | None, timeout_s: float
    ) -> AbstractAsyncContextManager[Response]: ...


def _read_outcome(fut: Any) -> None:
    if not fut.cancelled():
        fut.exception()


class _AiohttpResponse:
    def __init__(self, resp: Any) -> None:
        self._resp = resp
        self.status: int = resp.status

    async def lines(self) -> AsyncIterator[bytes]:
        import aiohttp

        # Whole reads split here: ~3x less CPU than aiohttp's per-line readline, and every line of
        # one read gets the time the read completed (when its bytes had in fact all arrived).
        buf = b""
        content = self._resp.content
        conn = self._resp.connection
        proto = conn.protocol if conn is not None else None
        closed = proto.closed if proto is not None else None

        def on_closed(_: object) -> None:
            # aiohttp (3.14) leaves the reader waiting forever when the body's chunk framing is
            # broken and the server then closes: wake it with an error instead.
            if not content.is_eof():
                content.set_exception(aiohttp.ClientPayloadError("connection closed mid-response"))

        if closed is not None:
            # aiohttp creates this future when first asked for it, so it is ours to read: a reset sets an
            # exception on it that asyncio would otherwise log as "never retrieved" (the stream's own
            # read fails with the reset and records it)
            closed.add_done_callback(_read_outcome)
            closed.add_done_callback(on_closed)
        try:
            async for data in content.iter_any():
                if buf:
                    data = buf + data
                *lines, buf = data.split(b"\n")
                for line in lines:
                    if line and line != b"\r":
                        yield line
            if buf:
                yield buf
        except aiohttp.ClientError as e:
            raise ConnectionResetError(f"{type(e).__name__}: {e}") from e
        finally:
            if closed is not None:
                closed.remove_done_callback(on_closed)

    async def read(self) -> bytes:
        import aiohttp

        try:
            return bytes(await self._resp.content.read(4096))
        except aiohttp.ClientError as e:
            raise ConnectionResetError(f"{type(e).__name__}: {e}") from e


class AiohttpTransport:
    """aiohttp with no connection cap (``limit=0``), one keep-alive pool for the whole run.

    Create it inside the running event loop; close it with :meth:`aclose`.
    """

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300, force_close=False)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"Content-Type": "application/json", **(headers or {})},
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
            read_bufsize=2**16,
        )

    @asynccontextmanager
    async def request(self, method: str, url: str, body: bytes | None, timeout_s: float) -> AsyncIterator[Response]:
        import aiohttp

        try:
            cm = self._session.request(method, url, data=body)
            resp = await cm.__aenter__()
        except aiohttp.ClientError as e:
            raise ConnectionError(f"{type(e).__name__}: {e}") from e
        try:
            yield _AiohttpResponse(resp)
        except BaseException:
            resp.close()  # drop a half-read connection rather than reuse it
            raise
        resp.release()

    async def aclose(self) -> None:
        await self._session.close()
