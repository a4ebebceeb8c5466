"""A machine's pace for one configuration: one fixed request, timed alone on a warmed-up server.

A certified rate belongs to the machine that measured it, and a machine's name does not tell its speed (two 2-core
hosts named alike served one draw 26-fold apart: docs/certification.md). So every trial's server times
``PACE_REPEATS`` completions of ``PACE_TOKENS`` tokens each, one after another (no batching: the step time of this
configuration on this machine), and launch.sh times the same after its warm-up and warns where it is more than
``pace_tolerance(device, spare)`` times slower: on a GPU past the stated rate's spare speed, but never inside the
card's own noise. The fastest of the repeats counts: other work on a shared host only ever slows a request (a
2-core VM's medians swung 1.75x within minutes: results/cpu-pace-spread-2026-12-06).
``pace_ms_per_token`` and ``slower`` run inside launch.sh: standard library only.
"""

from __future__ import annotations

import inspect

PACE_TOKENS = 32
PACE_REPEATS = 5
# above one 2-core VM's own swings between starts (up to 1.93x: results/cpu-pace-spread-2026-12-06)
CPU_PACE_TOLERANCE = 2.0
# above one GPU's spread between fresh servers (GPU_PACE_SPREAD), where the study states no spare speed
GPU_PACE_TOLERANCE = 1.25
GPU_PACE_SPREAD = 1.08  # 13 fresh servers on two H100s (results/gpu-pace-spread-2026-12-06): noise below it


def pace_tolerance(device: str, spare: float | None = None) -> float:
    """How much slower than the measured pace a start may be before it warns, for the device measured on
    (launch.machine.device_name: "cpu: ..." on a CPU). ``spare``: the stated rate's spare speed, how much slower a
    machine may be before the rate tips (a factor: tuner.certify.spare_speed). On a GPU the rate is not promised
    beyond it, so the warning comes there, but never inside the card's own spread; a CPU's spread is as wide as its
    tolerance, so there its pace cannot tell a spare speed."""
    if device.startswith("cpu: "):
        return CPU_PACE_TOLERANCE
    if spare is None:
        return GPU_PACE_TOLERANCE
    return min(GPU_PACE_TOLERANCE, max(spare, GPU_PACE_SPREAD))


def pace_ms_per_token(
    base: str, model: str, tokens: int = PACE_TOKENS, repeats: int = PACE_REPEATS, timeout: float = 120.0
) -> float | None:
    """The fastest of ``repeats`` sequential completions of exactly ``tokens`` tokens (ignore_eos): its wall time per
    output token, in ms; None when a request fails or answers another count (the pace is then unknown)."""
    import json
    import time
    import urllib.request

    body = {"model": model, "prompt": "Count from one to one hundred, one number a line.", "max_tokens": tokens}
    body.update(min_tokens=tokens, ignore_eos=True, temperature=0)
    data = json.dumps(body).encode()
    times = []
    for _ in range(repeats):
        req = urllib.request.Request(base + "/v1/completions", data=data, headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                answered = json.loads(r.read())["usage"]["completion_tokens"]
        except Exception:
            return None
        if answered != tokens:
            return None
        times.append(time.perf_counter() - t0)
    return 1000.0 * min(times) / tokens


def slower(measured_ms: float, here_ms: float | None, tolerance: float) -> str:
    """Words for a pace more than ``tolerance`` times the measured one; "" otherwise, or when this one is unknown."""
    if here_ms is None or here_ms <= tolerance * measured_ms:
        return ""
    return (
        f"a fixed request took {here_ms:.1f} ms a token here against {measured_ms:.1f} ms where it was measured "
        f"({here_ms / measured_ms:.1f}x slower)"
    )


def within(measured_ms: float, here_ms: float, tolerance: float) -> str:
    """The figures an operator compares where ``slower`` found nothing to warn of."""
    return (
        f"a fixed request took {here_ms:.1f} ms a token here, {measured_ms:.1f} where measured "
        f"(a warning above {tolerance:g}x)"
    )


def untimed(measured_ms: float) -> str:
    """Words for a pace that could not be timed: said, so that silence never stands for a match."""
    return (
        f"a fixed request of {PACE_TOKENS} tokens could not be timed here (it failed or answered another count), "
        f"so this machine's pace against the {measured_ms:.1f} ms a token measured is unknown"
    )


# the watchers' constants and functions (launch.script_parts.WATCHER_PY, tuner.export.machine_check), defined
# before they run them
PACE_SOURCE = f"PACE_TOKENS, PACE_REPEATS = {PACE_TOKENS}, {PACE_REPEATS}\n" + "\n".join(
    inspect.getsource(f) for f in (pace_ms_per_token, slower, within, untimed)
)
