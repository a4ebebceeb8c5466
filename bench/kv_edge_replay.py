"""Which committed certifications the KV-edge rule (tuner.certify.kv_edge) would state a step lower.

For every study under results/ with a best.json and its study.db: each certification's held rate, the lowest miss
above it (its soaks and its configuration's search levels), whether that miss ran out of KV cache, the rate the
rule states, and the preemptions in the soaks that held the held rate: where those preempted too, the rule (since
2026-12-06, night) soaks a step below before stating it (tuner.certify.kv_edge.next_edge_rate), which a replay
cannot do: it names the rate that soak would run at. Stored certifications keep the rate they stated; this only
replays the rule over them.

    python bench/kv_edge_replay.py [results/...]   (default: every study under results/)
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def study_results(db: Path) -> list:
    """The study's trials, read from a copy (opening a study may write to it)."""
    from tuner.search.study import open_study, results_of

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "study.db"
        shutil.copy(db, copy)
        return results_of(open_study(f"sqlite:///{copy}", resume=True, seed=0))


def rows(folder: Path) -> list[str]:
    from tuner.certify.certification import Certification
    from tuner.certify.edge import lowest_with_server
    from tuner.certify.kv_edge import kv_edge, ran_out_of_kv

    doc = json.loads((folder / "best.json").read_text())
    certs = [Certification.from_dict(d) for d in doc.get("certifications") or []]
    if not certs or not (folder / "study.db").exists():
        return []
    results = study_results(folder / "study.db")
    out = []
    for cert in certs:
        trial = next((r for r in results if r.number == cert.trial), None)
        runs = [r for r in results if trial is not None and r.config == trial.config]
        levels = [lv for r in runs for lv in r.levels]
        held = cert.held_rate
        lowest = lowest_with_server(held, cert.soaks, levels) if held is not None else None
        edge = kv_edge(held, cert.soaks, levels)
        miss = "-" if lowest is None else f"{lowest[0].rate_req_s:.3f} ({lowest[0].source})"
        full = "-" if lowest is None else ("yes" if ran_out_of_kv(lowest[1]) else "no")
        pre = "-" if lowest is None else str(lowest[1].preemptions)
        stated = "-" if held is None else f"{(edge.stated_req_s if edge else held):.3f}"
        name = folder.relative_to(ROOT / "results")
        kept = ", ".join(str(n) for n in edge.held_preemptions) if edge else "-"
        below = f"soaks {edge.stated_req_s:.3f} first" if edge and edge.held_preempted and not edge.below else "-"
        out.append(
            f"| {name} | {cert.trial} | {held or 0:.3f} | {miss} | {pre} | {full} | {stated} | {kept} | {below} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    folders = ap.parse_args().folders or sorted(p.parent for p in (ROOT / "results").glob("**/best.json"))
    print("| study | trial | held | lowest miss above | its preemptions | ran out of KV | stated by the rule "
          "| held soaks' preemptions | below the edge |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in folders:
        for line in rows(folder.resolve()):
            print(line)


if __name__ == "__main__":
    main()
