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
from loadtest.redact import mask
from loadtest.slo import SLO
from loadtest.workload import Workload

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
MAX_RATE = 1e6  # requests/s
MAX_CONCURRENCY = 1 << 16  # streams open at once
MAX_REQUESTS = 10_000_000  # requests in one run (an open-loop schedule is computed up front)
MAX_SECONDS = 7 * 86_400
MAX_TOKENS = 1 << 20
# open loop: a run's planned span sends exactly rate x span, a span of at least this; so does each window of this
# length after it (a steady-state level that runs past its span ends at one's end: loadtest.level_end)
MIN_RATE_WINDOW_S = 30.0


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
    # open loop: gaps scaled so that the planned span sends exactly rate x span (rate_window_s); False: free
    # gaps, and the count sent varies with the draw
    exact_count: bool = True
    endpoint: str = "completions"
    timeout_s: float = 300.0
    scrape_server_metrics: bool = True
    measure_host_cpu: bool = True  # loadtest.host_cpu: how busy the host was (Linux /proc; None elsewhere)
    probe: bool = True  # one tiny request first: checks the model name and continuous usage support
    # ask for the running token count on every chunk (exact token timing); off, the final usage is spread
    # over the events, as vLLM's own benchmark client does (it never asks for it)
    continuous_usage: bool = True
    # open loop only: stop sending once an SLO is certainly lost (in-flight requests are cancelled and
    # counted as "abandoned" failures); the capacity search uses it to skip the rest of a lost level
    abandon_when_lost: bool = False
    # open loop with ``requests``: a steady-state level keeps sending past them until it has lasted this many
    # times the mean end-to-end latency of its completed requests, for at most ``max_duration_s``
    steady_e2e_multiple: float | None = None
    max_duration_s: float | None = None
    # with ``steady_e2e_multiple``: past this many seconds the level ends once it has lasted JUDGED_LIFETIMES
    # (loadtest.level_end), still within ``max_duration_s``: one whose requests live long is judged, not cut short
    steady_soft_max_s: float | None = None

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise LoadtestInputError(problems[0])


def rate_window_s(s: LoadSpec, rate: float) -> float | None:
    """The first window, which sends exactly ``rate`` x its length (loadtest.arrivals): the run's planned span
    (``duration_s``, or ``requests`` at ``rate``), at least MIN_RATE_WINDOW_S; None with free gaps."""
    if not s.exact_count:
        return None
    planned = s.duration_s if s.duration_s is not None else (s.requests or 0) / rate
    return max(planned, MIN_RATE_WINDOW_S)


def next_rate_window_s(s: LoadSpec) -> float | None:
    """The length of each window after the first (loadtest.arrivals ``next_window_s``): MIN_RATE_WINDOW_S, short
    enough that a level running past its span stops soon after it has lasted long enough; None with free gaps."""
    return MIN_RATE_WINDOW_S if s.exact_count else None


def _within(value: float | None, low: float, high: float) -> bool:
    """None, or a finite number in (low, high] — low itself excluded unless it is 0 for counts."""
    return value is None or (math.isfinite(value) and low < value <= high)


def validate(s: LoadSpec) -> list[str]:
    """Every reason the spec cannot run, each naming the option, what is valid and the fix. Upper limits
    keep a typo from pre-computing a schedule or opening streams beyond memory."""
    p: list[str] = []
    if (s.rate is None) == (s.concurrency is None):
        p.append("give exactly one of --rate (open loop) and --concurrency (closed loop)")
    if not _within(s.rate, 0, MAX_RATE):
        p.append(f"--rate must be a positive number of requests/s (at most {MAX_RATE:g}), got {s.rate:g}")
    if not _within(s.concurrency, 0, MAX_CONCURRENCY):
        p.append(f"--concurrency must be ≥ 1 (at most {MAX_CONCURRENCY}), got {s.concurrency}")
    if (s.requests is None) == (s.duration_s is None):
        p.append("give exactly one of --requests and --duration")
    if not _within(s.requests, 0, MAX_REQUESTS):
        p.append(f"--requests must be ≥ 1 (at most {MAX_REQUESTS}), got {s.requests}")
    if not _within(s.duration_s, 0, MAX_SECONDS):
        p.append(f"--duration must be > 0 seconds (at most {MAX_SECONDS}), got {s.duration_s:g}")
    if s.rate is not None and s.duration_s is not None and s.rate * s.duration_s > MAX_REQUESTS:
        p.append(f"--rate × --duration asks for over {MAX_REQUESTS} requests; lower one of them")
    if not _within(s.output_tokens, 0, MAX_TOKENS):
        p.append(f"--output-tokens must be ≥ 1 (at most {MAX_TOKENS}), got {s.output_tokens}")
    if not _within(s.warmup, -1, MAX_REQUESTS):
        p.append(f"--warmup must be ≥ 0 (at most {MAX_REQUESTS}), got {s.warmup}")
    if s.steady_e2e_multiple is not None and (
        s.rate is None or s.requests is None or s.max_duration_s is None or not s.steady_e2e_multiple > 0
    ):
        p.append("a steady-state level needs --rate, --requests, a positive multiple and a maximum duration")
    if s.steady_soft_max_s is not None and (
        s.steady_e2e_multiple is None or s.max_duration_s is None or not 0 < s.steady_soft_max_s <= s.max_duration_s
    ):
        p.append("a steady-state level's soft maximum needs a multiple and lies in (0, its maximum duration]")
    if s.arrival not in arrivals.ARRIVALS:
        p.append(f"--arrival {s.arrival!r} is unknown; use one of {', '.join(arrivals.ARRIVALS)}")
    if not _within(s.burstiness, 0, 1e6):
        p.append(f"--burstiness must be > 0 (1 = Poisson, < 1 burstier), got {s.burstiness:g}")
    if s.endpoint not in ENDPOINTS:
        p.append(f"--endpoint {s.endpoint!r} is unknown; use one of {', '.join(ENDPOINTS)}")
    if not _within(s.timeout_s, 0, MAX_SECONDS):
        p.append(f"--timeout must be > 0 seconds (at most {MAX_SECONDS}), got {s.timeout_s:g}")
    if not _is_http_url(s.url):
        p.append(f"--url {mask(s.url)!r} is not an http(s) URL; e.g. http://127.0.0.1:8000")
    return p


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:  # 'http://[::1' (an unclosed IPv6 bracket), 'http://h:99999'
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in url)


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
