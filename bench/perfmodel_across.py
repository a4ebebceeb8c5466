"""The offline validation across studies (bench/perfmodel_validation.py): one study predicted from another's
defaults, one calibration pooled over a machine's studies, and configurations measured in several studies."""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_rows import Row, describe, predict_all, stats  # noqa: E402
from perfmodel_studies import STUDIES, Study  # noqa: E402

from perfmodel.rank import Calibration, calibrate  # noqa: E402


def cross_study(h200: tuple[Calibration, tuple], a30: tuple, study: Study, lines: list[str]) -> list[Row]:
    """The A30-memory study predicted from the native study's defaults: same H200, same vLLM."""
    cal, _ = h200
    _, _, _, results, observed = a30
    rows = [replace(r, study="a30-from-h200-defaults") for r in predict_all(study, cal, results, observed)]
    lines.append(
        "## h200-llama-3-8b-a30 predicted from h200-llama-3-8b-h200's defaults (same GPU and vLLM; "
        "A30 memory: 48-110k KV tokens instead of 0.8-1.9M)"
    )
    lines.append("  same family, same KV dtype:  " + stats([r for r in rows if r.role == "predicted"]))
    lines.append(
        "  same family, any KV dtype:   " + stats([r for r in rows if r.role in ("predicted", "extrapolated")])
    )
    return rows


def pooled(machine: str, done: dict[str, tuple[Calibration, tuple]], evaluations: int, lines: list[str]) -> list[Row]:
    """One calibration on the defaults of every study of the machine (one engine family: same GPU, vLLM and
    weights; chat and longdoc alike), predicting all their configurations: a calibration kept across studies."""
    chosen = [s for s in STUDIES if s.machine == machine and s.folder in done]
    if len(chosen) < 2:
        return []
    _, gpu, spec, _, _ = done[chosen[0].folder][1]
    bases = []
    for s in chosen:
        _, _, _, results, observed = done[s.folder][1]
        bases.append(observed[next(r for r in results if r.is_baseline).number])
    t0 = time.monotonic()
    cal = calibrate(bases, spec, gpu, max_evaluations=evaluations)
    secs = time.monotonic() - t0
    rows: list[Row] = []
    for s in chosen:
        _, _, _, results, observed = done[s.folder][1]
        baselines = {r.number for r in results if r.is_baseline}
        for r in predict_all(s, cal, results, observed):
            role = "calibration" if r.trial in baselines else r.role
            rows.append(replace(r, study=f"{machine.lower()}-pooled:{s.folder}", role=role))
    lines.append(
        f"## {machine}: one calibration on the defaults of all {len(chosen)} studies ({secs:.0f} s; costs "
        f"{json.dumps({k: float(f'{v:.3g}') for k, v in cal.costs.to_dict().items()})}), every other "
        "configuration of those studies predicted"
    )
    lines.append("  same family, same KV dtype:  " + stats([r for r in rows if r.role == "predicted"]))
    lines.append(
        "  same family, any KV dtype:   " + stats([r for r in rows if r.role in ("predicted", "extrapolated")])
    )
    return rows


def across_studies(machine: str, done: dict[str, tuple[Calibration, tuple]], lines: list[str]) -> None:
    """The same configuration measured in two studies of the machine (other days, other servers)."""
    seen: dict[str, list[tuple[str, int, float]]] = {}
    for folder, (_, inputs) in done.items():
        if next(s for s in STUDIES if s.folder == folder).machine != machine:
            continue
        for r in inputs[3]:
            if r.best_rate:
                seen.setdefault(describe(r), []).append((folder, r.number, r.best_rate))
    for conf, where in seen.items():
        if len({f for f, _, _ in where}) > 1:
            caps = [c for _, _, c in where]
            lines.append(
                f"  {conf}: {[(f, n, round(c, 1)) for f, n, c in where]} "
                f"(max−min {100 * (max(caps) - min(caps)) / statistics.mean(caps):.0f} % of the mean)"
            )
