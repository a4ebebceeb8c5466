"""The tuner's exceptions. A failed trial is a *state* (see tuner.trial.runner), not an exception;
these are for bad input and for things the tuner cannot do at all.

    SlotuneError
     ├── UsageError          bad input from the user: CLI exits 2 with the message, no traceback
     │    ├── ProfileError   a GPU/workload profile or project file is missing a field or is malformed
     │    └── ModelSpecError config.json lacks what the budget needs, or an unknown model_type
     ├── BudgetError         a configuration cannot fit (carries the reasons)
     └── QuantizeError       the quantization subprocess failed or its quality gate failed

Messages name what failed, the value, and how to fix it.
"""

from __future__ import annotations


class SlotuneError(Exception):
    """Base of all slotune tuner errors."""


class UsageError(SlotuneError):
    """Bad input: the CLI prints the message and exits 2."""


class ProfileError(UsageError):
    """A profile/project file is unusable; the message names file and field."""


class ModelSpecError(UsageError):
    """A model directory's config.json cannot be understood."""


class BudgetError(SlotuneError):
    """A configuration does not fit in memory."""

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons


class QuantizeError(SlotuneError):
    """Quantization failed or its quality gate rejected the result."""
