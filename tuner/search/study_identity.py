"""What defines a study: the settings its measurements depend on. A resumed study must keep them, or its
trials would mix answers to different questions — a resume with another SLO once wrote ``slo_met: true``
and a launch.sh for an SLO never measured, and another workload ended in an Optuna traceback (the search
space of max_model_len had moved). Stored in the study when it is created; a resume that changes any of
them is refused, naming each difference (exit 2).
"""

from __future__ import annotations

from typing import Any

import optuna

from loadtest.slo import format_slos
from tuner.errors import UsageError
from tuner.inputs import Inputs, measure_plan

DEFINES_ATTR = "defines"
FLAGS = {  # each defining setting, and how the user sets it
    "slo": "--slo",
    "workload": "--workload",
    "model": "--model (its contents)",
    "gpu": "--gpu",
    "emulate_on": "--emulate-on",
    "quantize": "--quantize",
    "quantized_model": "--quantized-model",
    "draft_model": "--draft-model",
    "load_format": "--load-format",
    "dtype": "--dtype",
    "output_tokens": "--output-tokens",
    "level_seconds": "--level-seconds",
    "vllm": "the vLLM version of --vllm-python",
}


def study_defines(inp: Inputs, fingerprint: str) -> dict[str, str]:
    """The defining values of a run with these inputs, as text."""
    s = inp.settings
    w = inp.workload
    return {
        "slo": format_slos(inp.slos),
        "workload": f"{w.name} (requests up to {w.max_input_tokens}+{w.max_output_tokens} tokens)",
        "model": f"{inp.model_dir} (fingerprint {fingerprint[:12]})",
        "gpu": inp.gpu.name,
        "emulate_on": inp.actual_gpu.name if inp.actual_gpu else "-",
        "quantize": s.quantize,
        "quantized_model": s.quantized_model or "-",
        "draft_model": s.draft_model or "-",
        "load_format": s.load_format or "-",
        "dtype": s.dtype or "auto",
        "output_tokens": str(s.output_tokens or "-"),
        "level_seconds": f"{measure_plan(s, inp.gpu).level_duration_s:g}",
        "vllm": inp.vllm.version,
    }


def _differences(stored: dict[str, Any], now: dict[str, str]) -> list[str]:
    out = []
    for key, value in now.items():
        before = stored.get(key)
        if before is None or before == value:
            continue  # a key an older slotune did not store cannot be compared
        if key == "model" and before.split(" (")[-1] == value.split(" (")[-1]:
            continue  # the same contents at another path
        out.append(f"{FLAGS[key]}: {before!r} then, {value!r} now")
    return out


def check_same_study(study: optuna.Study, defines: dict[str, str]) -> None:
    """Record ``defines`` in a new study; refuse (UsageError) a resume that changes any of them."""
    stored = study.user_attrs.get(DEFINES_ATTR)
    if not isinstance(stored, dict):
        study.set_user_attr(DEFINES_ATTR, defines)
        return
    diffs = _differences(stored, defines)
    if diffs:
        raise UsageError(
            "--resume: this run would change what the study measures — "
            + "; ".join(diffs)
            + ". Resume with the study's values, or start a new study with another --out (or --storage)"
        )
