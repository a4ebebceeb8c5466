"""What each setting accepts: one ``Rule`` per ``tuner.settings.fields.FIELDS`` entry, applied to a flag's text
and to a slotune.yaml value alike, so the two can never disagree (a flag once took ``--level-seconds -5``
that the file refused).

A rule turns a flag's text into the field's type, checks the value and, when it is wrong, says what is
valid and gives an example; the caller adds where the value came from (the flag, or file:line: key).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadtest.slo import SLOError, parse_slos

MAX_SEED = 2**31 - 1  # the sampler adds the trial count and numpy's seeds end at 2**32 - 1


@dataclass(frozen=True)
class Rule:
    valid: str  # the valid values in words: "a whole number from 1 to 100000"
    example: str  # a valid value, shown as the fix
    test: Callable[[Any], str | None] = lambda value: None  # a problem beyond type and range, or None
    low: float | None = None
    high: float | None = None

    def problem(self, value: Any) -> str | None:
        """Why ``value`` (already of the field's type) is not valid, or None."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be {self.valid}"
        if self.low is not None and value < self.low or self.high is not None and value > self.high:
            return f"must be {self.valid}"
        return self.test(value)


def whole(low: int, high: int, unit: str = "", example: int | None = None) -> Rule:
    return Rule(f"a whole number{unit} from {low} to {high}", str(example or max(low, 1)), low=low, high=high)


def seconds(high: float, example: str) -> Rule:
    valid = f"a number of seconds > 0 and ≤ {high:,.0f}"
    return Rule(valid, example, lambda value: None if value > 0 else f"must be {valid}", high=high)


def choice(*values: str) -> Rule:
    def test(value: Any) -> str | None:
        return None if value in values else f"must be one of {', '.join(values)}"

    return Rule("one of " + ", ".join(values), values[0], test)


def _text(value: Any) -> str | None:
    if not value.strip():
        return "must not be empty"
    if "\0" in value or "\n" in value:
        return "must not contain a NUL or newline character"
    return None


def _slo(value: Any) -> str | None:
    try:
        parse_slos(value)
    except SLOError as exc:
        return str(exc)
    return None


def _devices(value: Any) -> str | None:
    ids = value.split(",")
    if not all(re.fullmatch(r"\s*\d{1,4}\s*", d) for d in ids):
        return "must be GPU indices separated by commas"
    if len({int(d) for d in ids}) != len(ids):
        return "names a GPU twice"
    return None


def _storage(value: Any) -> str | None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if (problem := _text(value)) is not None:
        return problem
    try:
        url = make_url(value)
    except (ArgumentError, ValueError):
        return "is not a database URL"
    if url.get_backend_name() not in ("sqlite", "postgresql", "mysql"):
        return f"names database {url.get_backend_name()!r}, which Optuna's storage does not support"
    return None


TEXT = Rule("a non-empty text without NUL or newline characters", "x", _text)
PATH = Rule("a path", "./my-model", _text)
SLO_TEXT = Rule("SLOs such as ttft_p95=2s,tpot_p99=80ms", "ttft_p95=2s", _slo)
DEVICES = Rule("GPU indices separated by commas, each once", "0,1", _devices)
STORAGE = Rule(
    "an Optuna storage URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB (password in PGPASSWORD)",
    "sqlite:///study.db",
    _storage,
)
FLAG = Rule("true or false", "true")
VERSION = Rule(
    "a release number such as 0.26.0",
    "0.26.0",
    lambda value: None if re.fullmatch(r"\d+\.\d+(\.\d+)?[\w.+-]*", value) else "must be a release number",
)
SEED = whole(0, MAX_SEED)
FRACTION = Rule("a fraction > 0 and ≤ 1", "0.9", lambda value: None if value > 0 else "must be > 0", high=1)


def flag_type(kind: type, rule: Rule) -> Callable[[str], Any]:
    """An argparse ``type=`` for a subcommand's flag checked by ``rule`` (argparse adds the flag's name)."""

    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: must be {rule.valid}") from None
        problem = rule.problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{text!r}: {problem}; e.g. {rule.example}")
        return value

    convert.__name__ = kind.__name__
    return convert
