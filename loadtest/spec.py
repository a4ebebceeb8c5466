"""What to measure: :class:`LoadSpec` (validated on construction) and where the server is.

``check_server`` answers "is anything there?" within 5 s, before a run starts.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from loadtest import arrivals
from loadtest.errors import LoadtestInputError, ServerUnreachable
from loadtest.slo import SLO
from loadtest.workload import Workload

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass(frozen=True)
class LoadSpec:
    """One measurement. Exactly one of ``rate``/``concurrency`` and one of ``requests``/``duration_s``."""

    url: str
    model: str
    workload: Workload
    rate: float | None = None
    concurrency: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    output_tokens: int | None = None
    warmup: int = 0
    seed: int = 0
    slos: tuple[SLO, ...] = ()
    tokenizer: str | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    endpoint: str = "completions"
    timeout_s: float = 300.0
    scrape_server_metrics: bool = True
    probe: bool = True  # one tiny request first: checks the model name and continuous usage support
    # open loop only: stop sending once an SLO is certainly lost (in-flight requests are cancelled and
    # counted as "abandoned" failures); the capacity search uses it to skip the rest of a lost level
    abandon_when_lost: bool = False
    # open loop with ``requests``: a steady-state level keeps sending past them until it has lasted this many
    # times the mean end-to-end latency of its completed requests, for at most ``max_duration_s``
    steady_e2e_multiple: float | None = None
    max_duration_s: float | None = None

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise LoadtestInputError(problems[0])


def validate(s: LoadSpec) -> list[str]:
    """Every reason the spec cannot run, each naming the option and the fix."""
    p: list[str] = []
    if (s.rate is None) == (s.concurrency is None):
        p.append("give exactly one of --rate (open loop) and --concurrency (closed loop)")
    if s.rate is not None and not (s.rate > 0 and math.isfinite(s.rate)):
        p.append(f"--rate must be a positive number of requests/s, got {s.rate:g}")
    if s.concurrency is not None and s.concurrency < 1:
        p.append(f"--concurrency must be ≥ 1, got {s.concurrency}")
    if (s.requests is None) == (s.duration_s is None):
        p.append("give exactly one of --requests and --duration")
    if s.requests is not None and s.requests < 1:
        p.append(f"--requests must be ≥ 1, got {s.requests}")
    if s.duration_s is not None and not s.duration_s > 0:
        p.append(f"--duration must be > 0 seconds, got {s.duration_s:g}")
    if s.output_tokens is not None and s.output_tokens < 1:
        p.append(f"--output-tokens must be ≥ 1, got {s.output_tokens}")
    if s.warmup < 0:
        p.append(f"--warmup must be ≥ 0, got {s.warmup}")
    if s.steady_e2e_multiple is not None and (
        s.rate is None or s.requests is None or s.max_duration_s is None or not s.steady_e2e_multiple > 0
    ):
        p.append("a steady-state level needs --rate, --requests, a positive multiple and a maximum duration")
    if s.arrival not in arrivals.ARRIVALS:
        p.append(f"--arrival {s.arrival!r} is unknown; use one of {', '.join(arrivals.ARRIVALS)}")
    if not s.burstiness > 0:
        p.append(f"--burstiness must be > 0, got {s.burstiness:g}")
    if s.endpoint not in ENDPOINTS:
        p.append(f"--endpoint {s.endpoint!r} is unknown; use one of {', '.join(ENDPOINTS)}")
    if not s.timeout_s > 0:
        p.append(f"--timeout must be > 0 seconds, got {s.timeout_s:g}")
    parts = urlsplit(s.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        p.append(f"--url {s.url!r} is not an http(s) URL; e.g. http://127.0.0.1:8000")
    return p


def base_url(url: str) -> str:
    """``http://h:8000/v1/completions`` → ``http://h:8000``."""
    u = url.rstrip("/")
    for suffix in ("/v1/chat/completions", "/v1/completions", "/v1"):
        if u.endswith(suffix):
            return u[: -len(suffix)]
    return u


def check_server(url: str, timeout_s: float = 5.0) -> None:
    """Raise :class:`ServerUnreachable` unless an HTTP answer (any status) arrives within ``timeout_s``."""
    import urllib.error
    import urllib.request

    probe = base_url(url) + "/v1/models"
    result: list[BaseException | None] = []

    def attempt() -> None:
        try:
            urllib.request.urlopen(probe, timeout=timeout_s).close()
            result.append(None)
        except urllib.error.HTTPError:
            result.append(None)  # it answered: reachable (auth or routing is the request's business)
        except (OSError, ValueError) as e:
            result.append(getattr(e, "reason", None) if isinstance(getattr(e, "reason", None), OSError) else e)

    th = threading.Thread(target=attempt, daemon=True)
    th.start()
    th.join(timeout_s)
    err = result[0] if result else TimeoutError(f"no HTTP answer within {timeout_s:g} s")
    if err is not None:
        raise ServerUnreachable(
            f"cannot reach {url} ({type(err).__name__}: {err}); "
            "is the server running, and are host and port in --url right?"
        )
