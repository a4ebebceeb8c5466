"""User-supplied text files (YAML profiles, slotune.yaml, JSON), read so that no input can crash or
exhaust the reader: a size cap, strict UTF-8, and YAML without aliases (an alias bomb expands to
gigabytes), without duplicate keys (the last would silently win) and without Python tags.

Every problem raises the caller's error class (its CLI exits 2) with one line naming the file, the line
where known, and the fix. Shared by ``loadtest`` (workloads) and ``tune`` (profiles, project file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 4 << 20  # far above any profile or project file; a replay dataset has its own reader
MAX_DEPTH = 32  # levels of nested lists/mappings; profiles use 3


def read_text(path: Path, error: type[Exception], max_bytes: int = MAX_BYTES) -> str:
    """The file's text; ``error`` when it is missing, unreadable, too large or not UTF-8."""
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except IsADirectoryError:
        raise error(f"{path}: is a folder; give the file itself") from None
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc}); check the path and its permissions") from None
    if len(data) > max_bytes:
        raise error(f"{path}: larger than {max_bytes >> 20} MiB; this is not a file slotune expects here")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


def read_json(path: Path, error: type[Exception], max_bytes: int = MAX_BYTES) -> Any:
    text = read_text(path, error, max_bytes)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error(f"{path}: not valid JSON ({exc}); fix or re-download the file") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a file slotune expects here") from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases, duplicate keys and deep nesting."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        mark: Any = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, f"alias *{event.anchor} is not allowed in slotune files; write the value out", mark
            )
        if self.depth >= MAX_DEPTH:  # refused long before Python's recursion limit, which takes seconds to reach
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels; no slotune file needs that", mark
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice; keep one", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


def _describe(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    return f"{where}: not valid YAML: {(context + ', ') if context else ''}{problem}"


def read_yaml(path: Path, error: type[Exception], max_bytes: int = MAX_BYTES) -> tuple[Any, dict[str, int]]:
    """(the document, {top-level key: its line}); an empty file is ``None``."""
    text = read_text(path, error, max_bytes)
    try:
        loader = _StrictLoader(text)  # its reader refuses control characters (NUL) here already
    except yaml.YAMLError as exc:
        raise error(_describe(path, exc)) from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise error(_describe(path, exc)) from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a file slotune expects here") from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            lines.setdefault(str(key_node.value), key_node.start_mark.line + 1)
    return data, lines
