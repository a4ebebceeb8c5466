"""loadtest's exceptions. A failed *request* is data (a reason in the report), never one of these.

LoadtestError
 ├── LoadtestInputError   bad input: CLI exits 2 with the message
 │    └── WorkloadError   a workload file is malformed (names file and field)
 └── ServerUnreachable    nothing answers at the URL (raised within 5 s)
"""

from __future__ import annotations


class LoadtestError(Exception):
    """Base of loadtest's errors."""


class LoadtestInputError(LoadtestError):
    """Bad input: the CLI prints the message and exits 2."""


class WorkloadError(LoadtestInputError):
    """A workload profile is malformed; the message names the file and the field."""


class ServerUnreachable(LoadtestError):
    """The server cannot be reached at all."""
