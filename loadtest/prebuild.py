"""A level's requests built before they are due, off the event loop.

Building a prompt of exact length runs the tokenizer (0.8 ms for a `chat` prompt, 24 ms for `longdoc`'s
~7.7k tokens on the 2-core machine): on the event loop that delays the sends and the reading of every
stream in flight, and the delay is counted in TTFT and ITL. So the requests every level sends (its
minimum) are built before its clock starts, and the rest, which only a longer level reaches, by one thread
a little ahead of their send times. Only that thread uses the tokenizer while the level runs (a fast
tokenizer is not safe to share between threads); a send whose request is not built yet waits for it,
and that wait is counted as the load generator's lateness, as any other.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Prebuilt(Generic[T]):
    """``build(k)`` for k in 0..count-1: the first ``before`` at once (``start``), the rest by a thread that
    keeps ``ahead`` requests past the latest one asked for."""

    def __init__(self, build: Callable[[int], T], count: int, before: int, ahead: int) -> None:
        self._build, self._count = build, count
        self._before, self._ahead = min(before, count), max(1, ahead)
        self._slots: list[T | None] = [None] * count
        self._asked = 0
        self._stop = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._waiter: tuple[int, asyncio.Future[None]] | None = None  # the send waiting for its request

    def __enter__(self) -> Prebuilt[T]:
        for k in range(self._before):
            self._slots[k] = self._build(k)
        if self._before < self._count:
            self._thread = threading.Thread(target=self._produce, name="prebuild", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _produce(self) -> None:
        try:
            for k in range(self._before, self._count):
                with self._cond:
                    while not self._stop and k > self._asked + self._ahead:
                        self._cond.wait()
                    if self._stop:
                        return
                item = self._build(k)
                with self._cond:
                    self._slots[k] = item
                    self._wake(k)
        except BaseException as e:  # noqa: BLE001 - handed to the level, which raises it
            with self._cond:
                self._error = e
                self._wake(None)

    def _wake(self, k: int | None) -> None:
        """Under the lock: resolve the waiting send's future when its request is built (``k``) or failed."""
        if self._waiter is not None and (k is None or self._waiter[0] == k):
            fut = self._waiter[1]
            self._waiter = None
            fut.get_loop().call_soon_threadsafe(_resolve, fut)

    async def get(self, k: int) -> T:
        """The k-th request; a send whose request the thread has not built yet waits for it."""
        with self._cond:
            if k > self._asked:
                self._asked = k
                self._cond.notify_all()
            item, failed = self._slots[k], self._error
            if item is None and failed is None:
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiter = (k, fut)
        if item is not None:
            return item
        if failed is None:
            await fut
        if self._error is not None:
            raise self._error
        item = self._slots[k]
        assert item is not None  # woken only once it is built, or on an error
        return item


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
