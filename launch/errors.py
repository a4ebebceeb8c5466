"""launch's exceptions.

LaunchError
 ├── LaunchInputError   the config cannot be turned into a command for the installed vLLM
 │                      (unknown flag for that version, no vLLM in that interpreter): exit 2
 └── LaunchFailure      the server did not come up / died; carries a structured ``reason``
                        (see launch.classify) and the log tail
"""

from __future__ import annotations


class LaunchError(Exception):
    """Base of launch's errors."""


class LaunchInputError(LaunchError):
    """The configuration or interpreter is unusable before anything starts."""


class LaunchFailure(LaunchError):
    """A server failed to start or crashed. ``reason`` is one of launch.classify.REASONS."""

    def __init__(self, reason: str, message: str, log_tail: str = "") -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.detail = message
        self.log_tail = log_tail
