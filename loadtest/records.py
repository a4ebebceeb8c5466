"""Raw per-request records: timestamps as they were observed, nothing derived.

Every time is seconds on the run's monotonic clock. Metrics are computed later, in one pure
function (:func:`loadtest.metrics.compute_metrics`), so the same records can be re-scored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Chunk:
    """One streamed event that carried output: when it arrived and how many tokens it held.

    ``tokens`` comes from the server's running usage (``continuous_usage_stats``): the increase of
    ``completion_tokens`` since the previous event. None when the server did not report it; the
    final usage then fixes the total (see ``metrics.token_counts``). Never a count of chunks.
    """

    t: float
    tokens: int | None


@dataclass(frozen=True)
class RequestRecord:
    """Everything observed about one request. ``failure`` is a reason key, or None for a success."""

    index: int
    scheduled_at: float
    sent_at: float
    chunks: tuple[Chunk, ...] = ()
    done_at: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    failure: str | None = None
    detail: str = ""
    planned_input_tokens: int | None = None
    planned_output_tokens: int | None = None
    warmup: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, for the per-request JSONL file."""
        d = asdict(self)
        d["chunks"] = [[c.t, c.tokens] for c in self.chunks]
        if not d["extra"]:
            del d["extra"]
        return d


# Failure reasons (stable keys of LoadReport.failures).
HTTP_PREFIX = "http_"  # http_<status>, e.g. http_500, http_429
CONNECTION = "connection_error"  # refused, reset, DNS
TIMEOUT = "timeout"  # no complete answer within timeout_s
STREAM_CUT = "stream_cut"  # the stream ended before [DONE] and the final usage
MALFORMED = "malformed_chunk"  # an event that is not JSON or not a completion chunk
SERVER_ERROR = "server_error"  # the server sent an error object inside the stream
NO_USAGE = "no_usage"  # [DONE] came without any usage: output tokens unknown
NO_OUTPUT = "no_output"  # finished with zero output tokens
ABANDONED = "abandoned"  # cancelled in flight: the level's SLO was already lost (abandon_when_lost)
FAILURE_REASONS = (CONNECTION, TIMEOUT, STREAM_CUT, MALFORMED, SERVER_ERROR, NO_USAGE, NO_OUTPUT, ABANDONED)
