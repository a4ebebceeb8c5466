"""What a study keeps of its ``--confirm`` runs (tuner.certify.confirm), and how they are read back: each run's
measurements and GPUs are stored; means and gains follow from all runs of a pair when read, so a resumed
study adds rounds instead of losing them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuner.certify.confirm import CAPACITY, GOODPUT, Confirmation, rival_of
from tuner.certify.summary import Summary

STUDY_ATTR = "confirmations"  # the study's user attribute: every --confirm run's fresh measurements, kept


def stored_run(c: Confirmation, devices: str | None, finished: str) -> dict[str, Any]:
    """What the study keeps of one --confirm run: the measurements and the GPU each ran on, not what follows
    from them (means and gains are computed from all runs of a pair when they are read). ``devices`` is the
    option as given: which GPU measured what is ``best_devices`` / ``rival_devices``, since the rounds swap
    GPUs and a resumed run goes on with the round order."""
    return {
        "best_trial": c.best_trial,
        "rival_trial": c.rival_trial,
        "rival_is_baseline": c.rival_is_baseline,
        f"best_{c.measure}_req_s": list(c.best_req_s),
        f"rival_{c.measure}_req_s": list(c.rival_req_s),
        "best_devices": list(c.best_devices),
        "rival_devices": list(c.rival_devices),
        "devices": devices,
        "finished": finished,
    }


def measure_of(entry: Mapping[str, Any]) -> str:
    """What a stored run measured: capacity, or goodput in a run stored before capacity ranked."""
    return CAPACITY if f"best_{CAPACITY}_req_s" in entry else GOODPUT


def values_of(entry: Mapping[str, Any], who: str) -> list[float]:
    """A stored run's measurements of ``who`` ("best" or "rival"), in its measure's unit (req/s)."""
    return list(entry[f"{who}_{measure_of(entry)}_req_s"])


def current_confirmation(entries: Sequence[Mapping[str, Any]], summary: Summary) -> Confirmation | None:
    """The stored runs (``stored_run``s) of the current best against its current rival, merged: a resume adds
    rounds. Runs of one measure only merge: the latest run's (a goodput run of an older version stays apart)."""
    rival = rival_of(summary)
    if summary.best is None or rival is None:
        return None
    pair = [e for e in entries if e["best_trial"] == summary.best.number and e["rival_trial"] == rival.number]
    if not pair:
        return None
    measure = measure_of(pair[-1])
    mine = [e for e in pair if measure_of(e) == measure]

    def where(e: Mapping[str, Any], who: str) -> list[str | None]:  # runs stored before it was recorded: None
        return list(e.get(f"{who}_devices") or [None] * len(values_of(e, who)))

    return Confirmation(
        summary.best.number,
        rival.number,
        rival.is_baseline,
        tuple(g for e in mine for g in values_of(e, "best")),
        tuple(g for e in mine for g in values_of(e, "rival")),
        measure=measure,
        calls=len(mine),
        best_devices=tuple(d for e in mine for d in where(e, "best")),
        rival_devices=tuple(d for e in mine for d in where(e, "rival")),
    )


def with_confirmations(
    meta: dict[str, Any], entries: Sequence[Mapping[str, Any]], summary: Summary, state_gain: bool = True
) -> tuple[dict[str, Any], Confirmation | None]:
    """best.json's metadata with the study's confirmations: all runs (``confirmations``), and those of the
    current best and rival merged (``confirmation`` and a note); when the best has changed since, a note says
    it is not confirmed. Unchanged without stored runs."""
    if not entries:
        return meta, None
    current = current_confirmation(entries, summary)
    out = {**meta, "confirmations": [dict(e) for e in entries]}
    if current is not None:
        out["confirmation"] = current.to_dict()
        out["notes"] = [*meta["notes"], current.line(gain=state_gain)]
    else:
        note = (
            "--confirm re-measured other configurations than the current best and its rival (best.json: "
            "confirmations); the current best is not confirmed."
        )
        # the defaults' fresh measurements still say more about them than their one search measurement
        kept = [e for e in entries if e["rival_is_baseline"] and measure_of(e) == CAPACITY]
        defaults = [g for e in kept for g in values_of(e, "rival")]
        mean = sum(defaults) / len(defaults) if defaults else 0.0
        if mean > 0:  # no gain from it: the best's figure is of another kind (one search measurement)
            note += f" vLLM's defaults on fresh servers: {mean:.3f} req/s capacity (n={len(defaults)})."
        out["notes"] = [*meta["notes"], note]
    return out, current
