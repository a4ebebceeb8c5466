"""The lifetimes rule (loadtest.steady.MIN_LIFETIMES) over the committed certifications: how many mean request
lifetimes each soak that held lasted, whether the rule would have let the certified figure stand, and what
`vllm bench serve` said where it checked that very rate.

    python bench/soak_lifetimes.py [results]

A soak's send window is its requests over its rate; its lifetime is the mean end-to-end latency of its completed
requests (best.json keeps both). Soaks stored without per-request metrics are left out. No server is started.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loadtest.steady import MIN_LIFETIMES  # noqa: E402

SAME_RATE = 0.015  # a cross-check within 1.5 % of the certified rate checked that rate


@dataclass(frozen=True)
class Certified:
    study: Path
    trial: int
    rate: float
    held_lifetimes: tuple[float, ...]  # of each soak that held at or above the certified rate
    under_rule: float | None  # the highest held rate below every miss, a held soak of too few lifetimes a miss

    @property
    def stands(self) -> bool:
        return self.under_rule is not None and self.under_rule >= self.rate * (1 - 1e-9)


def lifetimes(soak: dict) -> float | None:
    metrics = soak.get("metrics") or {}
    e2e = (metrics.get("e2e_ms") or {}).get("mean")
    sent = metrics.get("requests_ok", 0) + metrics.get("requests_failed", 0)
    if not e2e or not sent or not soak.get("rate_req_s"):
        return None
    return (sent / soak["rate_req_s"]) / (e2e / 1000.0)


def certified(best: Path) -> Iterator[Certified]:
    data = json.loads(best.read_text())
    for cert in data.get("certifications") or []:
        rate = cert.get("certified_rate_req_s")
        if not rate:
            continue
        soaks = cert.get("soaks") or []
        held = [s for s in soaks if s.get("holds") and s["rate_req_s"] >= rate * (1 - 1e-9)]
        ks = tuple(k for s in held if (k := lifetimes(s)) is not None)
        if ks:
            yield Certified(best.parent, int(cert["trial"]), float(rate), ks, under_rule(soaks))


def under_rule(soaks: list[dict]) -> float | None:
    """The certified rate had every held soak of fewer than MIN_LIFETIMES lifetimes missed."""
    held, missed = [], []
    for s in soaks:
        k = lifetimes(s)
        ok = s.get("holds") and (k is None or k >= MIN_LIFETIMES)
        (held if ok else missed).append(s["rate_req_s"])
    below = [r for r in held if all(r < m for m in missed)]
    return max(below) if below else None


def bench_verdict(cert: Certified, root: Path) -> str:
    """'held' / 'missed' of a cross-check at the certified rate in the study's folder tree, or ''."""
    folder = cert.study if (cert.study / "README.md").exists() else cert.study.parent
    verdicts = []
    for f in sorted(folder.rglob("crosscheck*.json")):
        try:
            check = json.loads(f.read_text())
        except ValueError:
            continue
        rate = check.get("rate")
        if isinstance(rate, (int, float)) and abs(rate - cert.rate) <= SAME_RATE * cert.rate and "held" in check:
            verdicts.append("held" if check["held"] else "missed")
    return "/".join(verdicts)


def main(root: Path) -> None:
    rows = [c for best in sorted(root.rglob("best.json")) for c in certified(best)]
    print(f"{'study':58} {'trial':>5} {'certified':>9}  lifetimes of the soaks that held  rule    vllm bench serve")
    for c in rows:
        ks = ", ".join(f"{k:.1f}" for k in c.held_lifetimes)
        rule = "stands" if c.stands else f"{c.under_rule:.3f}" if c.under_rule else "none"
        print(
            f"{str(c.study.relative_to(root)):58} {c.trial:>5} {c.rate:9.3f}  {ks:32} {rule:7} {bench_verdict(c, root)}"
        )
    refused = [c for c in rows if not c.stands]
    print(
        f"\n{len(rows)} certified figures with per-request soak metrics; under the rule ({MIN_LIFETIMES:g} lifetimes) "
        f"{len(refused)} would not stand (rule: the rate those soaks certify then; none: no soak below every miss)"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results"))
