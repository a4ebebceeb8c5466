"""YAML text of an export: the header as comments, then the documents (keys in the order built)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # a shared dict is written out twice, not as &id001/*id001
        return True


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    """A multi-line string (the machine check's script) as a literal block, readable as the code it is."""
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _text)


def render_yaml(header: Sequence[str], documents: Sequence[dict[str, Any]]) -> str:
    lines: list[str] = []
    for line in header:  # long sentences continue on indented comment lines
        lines += textwrap.wrap(line, 112, subsequent_indent="    ", break_on_hyphens=False) or [""]
    comments = "".join(f"# {line}\n" if line else "#\n" for line in lines)
    body = yaml.dump_all(
        documents,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        explicit_start=len(documents) > 1,
    )
    return comments + body
