"""Which committed certifications the thin-margin rule (tuner.certify.margin) would state a step lower.

For every best.json under results/: each certification's held rate, one SLO's values in the soaks that held that
rate (the SLO the rule names where it steps, else the first), their 90 % intervals' highest upper end, whether the
rule steps (judged only where no KV-bound edge stepped first), and the `vllm bench serve` draws found in the study's
folder at the held and at the stated rate (within 1.5 %; held H, missed M). Stored certifications keep the rate
they stated; this only replays the rule over them.

    python bench/margin_replay.py [results/...]   (default: every study under results/)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench_draws(folder: Path, rate: float) -> str:
    """The cross-check verdicts at ``rate`` under ``folder`` ('H M H'; '-' where none ran)."""
    out = []
    for path in sorted(folder.glob("**/*crosscheck-vllm-bench-*.json")):
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(run, dict) and math.isclose(run.get("rate") or 0.0, rate, rel_tol=0.015):
            out.append({True: "H", False: "M"}.get(run.get("held"), "?"))
    return " ".join(out) or "-"


def rows(folder: Path) -> list[str]:
    from loadtest.slo import parse_slos
    from tuner.certify.certification import Certification
    from tuner.certify.margin import thin_margin

    doc = json.loads((folder / "best.json").read_text())
    slos = tuple(parse_slos(doc["slo"])) if doc.get("slo") else ()
    out = []
    for raw in doc.get("certifications") or []:
        cert = Certification.from_dict(raw)
        held = cert.held_rate
        if held is None:
            continue
        soaks = [s for s in cert.soaks if s.holds and s.rate == held]
        thin = thin_margin(held, cert.soaks, slos) if cert.kv_edge is None else None
        key = thin.slo if thin is not None else (slos[0].key if slos else "-")
        values = " / ".join(f"{v:.0f}" for s in soaks if (v := s.slo_values.get(key)) is not None)
        highs = [iv.high for s in soaks if (iv := s.intervals.get(key)) is not None]
        taken = cert.kv_edge or thin
        step, stated = (taken.kind, taken.stated_req_s) if taken is not None else ("no", held)
        high = f"{max(highs):.0f}" if highs else "-"
        name = folder.relative_to(ROOT / "results")
        out.append(
            f"| {name} | {cert.trial} | {held:.3f} | {key} {values} | {high} | {step} | {stated:.3f} | "
            f"{bench_draws(folder, held)} | {bench_draws(folder, stated) if stated != held else ''} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    folders = ap.parse_args().folders or sorted(p.parent for p in (ROOT / "results").glob("**/best.json"))
    head = (
        "| study | trial | held | SLO in the held soaks (ms) | interval high | step | stated | draws: held | stated |"
    )
    print(head)
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in folders:
        for line in rows(folder.resolve()):
            print(line)


if __name__ == "__main__":
    main()
