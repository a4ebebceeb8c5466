"""A level's requests built ahead of their sends (loadtest.prebuild)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from loadtest.prebuild import Prebuilt


class Builder:
    """Records what was built, from which thread, and whether two builds ever overlapped."""

    def __init__(self, delay_s: float = 0.0, fail_at: int | None = None) -> None:
        self.built: list[int] = []
        self.threads: set[str] = set()
        self.overlapped = False
        self._busy = threading.Lock()
        self.delay_s, self.fail_at = delay_s, fail_at

    def __call__(self, k: int) -> str:
        if not self._busy.acquire(blocking=False):
            self.overlapped = True
            self._busy.acquire()
        try:
            if k == self.fail_at:
                raise ValueError(f"cannot build {k}")
            time.sleep(self.delay_s)
            self.built.append(k)
            self.threads.add(threading.current_thread().name)
            return f"request {k}"
        finally:
            self._busy.release()


def test_the_minimum_is_built_before_the_level_and_the_rest_only_a_little_ahead() -> None:
    build = Builder()

    async def level() -> list[str]:
        with Prebuilt(build, count=1000, before=10, ahead=5) as requests:
            assert build.built == list(range(10))  # before the first send, on the caller's thread
            got = [await requests.get(k) for k in (0, 9, 20)]
            await asyncio.sleep(0.05)
            return got

    assert asyncio.run(level()) == ["request 0", "request 9", "request 20"]
    assert build.built == list(range(len(build.built))) and 21 <= len(build.built) <= 26  # 20 asked, 5 ahead
    assert "prebuild" in build.threads and not build.overlapped


def test_a_level_that_ends_early_stops_the_builder() -> None:
    build = Builder(delay_s=0.002)

    async def level() -> None:
        with Prebuilt(build, count=10_000, before=4, ahead=8) as requests:
            await requests.get(3)

    asyncio.run(level())
    done = len(build.built)
    time.sleep(0.05)
    assert len(build.built) == done <= 4 + 8 + 1


def test_a_failed_build_reaches_the_send_that_needs_it() -> None:
    async def level() -> None:
        with Prebuilt(Builder(fail_at=6), count=20, before=3, ahead=4) as requests:
            for k in range(20):
                await requests.get(k)

    with pytest.raises(ValueError, match="cannot build 6"):
        asyncio.run(level())


def test_everything_built_up_front_needs_no_thread() -> None:
    build = Builder()

    async def level() -> list[str]:
        with Prebuilt(build, count=5, before=50, ahead=1) as requests:
            return [await requests.get(k) for k in range(5)]

    assert asyncio.run(level()) == [f"request {k}" for k in range(5)]
    assert "prebuild" not in build.threads
