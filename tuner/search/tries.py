"""``--try-first``: configurations a user wants measured right after vLLM's defaults, before the sampler's own
(e.g. "does ngram speculation pay on my workload?"). Each names some knobs; the sampler picks the rest, except that
a named ``max_num_batched_tokens`` keeps chunked prefill on (without it, that knob is not the space's).

The text is ``KNOB=VALUE,KNOB=VALUE``, several configurations separated by ``;``. Its form is checked with the
other settings (``syntax_problem``); its values against the search space of this model, GPU and vLLM
(``tried_params``), so a value the space could never propose is refused with the choices it has.
"""

from __future__ import annotations

import re
from typing import Any

from tuner.errors import UsageError
from tuner.search.space import SpaceContext, knob_choices

FLAG = "--try-first"
_PAIR = re.compile(r"^([a-z_]+)=([^=,;]+)$")


def _split(text: str) -> list[list[str]]:
    return [[p.strip() for p in part.split(",") if p.strip()] for part in text.split(";") if part.strip()]


def syntax_problem(value: Any) -> str | None:
    """Why ``value`` is no ``KNOB=VALUE,...[;...]`` text (None: it is)."""
    configs = _split(str(value))
    if not configs:
        return "must name at least one KNOB=VALUE, e.g. speculative_method=ngram,num_speculative_tokens=3"
    for pairs in configs:
        for pair in pairs:
            if not _PAIR.match(pair):
                return f"{pair!r} is not KNOB=VALUE (e.g. max_num_seqs=64; several configurations: ';' between)"
    return None


def _value(text: str, choices: tuple[Any, ...]) -> Any:
    """``text`` as the choice it spells (1 and 1.0 alike; true/false as booleans); None when none does."""
    for choice in choices:
        if isinstance(choice, bool):
            if text.lower() == str(choice).lower():
                return choice
        elif isinstance(choice, int | float):
            try:
                if float(text) == choice:
                    return choice
            except ValueError:
                continue
        elif text == str(choice):
            return choice
    return None


def _one(pairs: list[str], choices: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        knob, text = pair.split("=", 1)
        if knob not in choices:
            raise UsageError(f"{FLAG} {knob!r}: not a knob of this search space; it has {', '.join(choices)}")
        value = _value(text.strip(), choices[knob])
        if value is None:
            allowed = ", ".join(str(c) for c in choices[knob])
            raise UsageError(f"{FLAG} {knob}={text}: not a value this space searches; it has {allowed}")
        params[knob] = value
    if params.get("enable_chunked_prefill") is False and "max_num_batched_tokens" in params:
        raise UsageError(
            f"{FLAG} max_num_batched_tokens needs enable_chunked_prefill=true: without chunking a whole prompt "
            "fits one step"
        )
    if "max_num_batched_tokens" in params:  # else the sampler may turn chunking off and the named value with it
        params.setdefault("enable_chunked_prefill", True)
    if "num_speculative_tokens" in params and params.get("speculative_method") in (None, "off"):
        raise UsageError(f"{FLAG} num_speculative_tokens needs speculative_method=ngram (or draft)")
    return params


def tried_params(text: str | None, ctx: SpaceContext) -> list[dict[str, Any]]:
    """The Optuna params of each configuration ``text`` names, checked against the space of ``ctx``."""
    if not text:
        return []
    choices = knob_choices(ctx)
    return [_one(pairs, choices) for pairs in _split(text)]


def sampled_knobs(params: dict[str, Any], ctx: SpaceContext) -> list[str]:
    """The knobs of the space ``params`` leaves to the sampler (those its named values make moot excluded)."""
    moot = set()
    if params.get("enable_chunked_prefill") is False:
        moot.add("max_num_batched_tokens")
    if params.get("speculative_method") == "off":
        moot.add("num_speculative_tokens")
    return [k for k in knob_choices(ctx) if k not in params and k not in moot]


def announce(params: dict[str, Any], ctx: SpaceContext) -> str:
    """One progress line: what a --try-first configuration pins and what it leaves to the sampler."""
    left = sampled_knobs(params, ctx)
    if not left:
        return f"{FLAG}: {describe(params)} (every knob named: one exact configuration)"
    return f"{FLAG}: {describe(params)}; the sampler picks {', '.join(left)} (name them to pin them)"


def describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
