"""Workloads: what requests look like. A built-in name, a YAML profile, or a dataset to replay.

YAML (``profiles/workloads/*.yaml``)::

    name: code
    input_tokens:  {dist: normal, mean: 512, std: 64, min: 256, max: 768}   # prompt tokens
    output_tokens: {dist: uniform, min: 64, max: 256}                        # generated tokens
    shared_prefix_fraction: 0.0   # share of each prompt identical across requests (prefix caching)
    system_prompt: null           # counted in input_tokens
    edit_instruction: null        # or text: each prompt is this instruction + an English passage to rewrite
    temperature: null             # or a number in [0, 2]: sent with every request (null: the server's default, 1.0)
    dataset: null                 # or {path: FILE, format: jsonl|sharegpt}: replay its prompts

Replay files can also be given directly: ``*.jsonl`` (one object a line with ``prompt`` or
``messages`` and optional ``output_tokens``) or ShareGPT ``*.json`` (``conversations`` lists).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtest.errors import WorkloadError
from loadtest.lengths import LengthDist, parse_length
from loadtest.textfile import read_text, read_yaml

DATASET_MAX_BYTES = 4 << 30  # replay datasets (ShareGPT is ~700 MB); profiles use textfile's own cap
DEFAULT_REPLAY_OUTPUT = 256  # output tokens of a replayed prompt that says nothing about its answer
CHARS_PER_TOKEN_BOUND = 3  # replayed text: tokens estimated as chars / 3 (an over-estimate for BPE)
_FIELDS = {
    "name",
    "description",
    "input_tokens",
    "output_tokens",
    "shared_prefix_fraction",
    "system_prompt",
    "edit_instruction",
    "dataset",
    "temperature",
}


@dataclass(frozen=True)
class ReplayEntry:
    """One replayed request: ``prompt`` or chat ``messages``; output length if the data gives one."""

    prompt: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    output_tokens: int | None = None
    reference_output: str | None = None

    @property
    def chars(self) -> int:
        if self.prompt is not None:
            return len(self.prompt)
        return sum(len(c) for _, c in self.messages or ())


@dataclass(frozen=True)
class Workload:
    name: str
    input_tokens: LengthDist | None = None
    output_tokens: LengthDist | None = None
    shared_prefix_fraction: float = 0.0
    system_prompt: str | None = None
    entries: tuple[ReplayEntry, ...] = ()
    source: str = ""
    description: str = ""
    # prompts are this instruction + an English passage (loadtest.passages): answers copy from the prompt
    edit_instruction: str | None = None
    # sampling temperature sent with every request; None leaves vLLM's default (1.0), at which a small model's
    # "repeat this" answers stop copying (results/cpu-spec-smollm2-2026-12-07)
    temperature: float | None = None

    @property
    def is_replay(self) -> bool:
        return bool(self.entries)

    @property
    def max_input_tokens(self) -> int:
        """Longest prompt in tokens (for replayed text an upper estimate: chars / 3)."""
        if self.entries:
            return max(-(-e.chars // CHARS_PER_TOKEN_BOUND) for e in self.entries)
        assert self.input_tokens is not None
        return self.input_tokens.max

    @property
    def max_output_tokens(self) -> int:
        """Longest answer in tokens (``--output-tokens`` overrides it at run time)."""
        if self.entries:
            outs = [e.output_tokens for e in self.entries if e.output_tokens is not None]
            refs = [
                -(-len(e.reference_output) // CHARS_PER_TOKEN_BOUND)
                for e in self.entries
                if e.output_tokens is None and e.reference_output
            ]
            default = self.output_tokens.max if self.output_tokens else DEFAULT_REPLAY_OUTPUT
            rest = [default] if any(e.output_tokens is None and not e.reference_output for e in self.entries) else []
            return max(outs + refs + rest)
        assert self.output_tokens is not None
        return self.output_tokens.max


def builtin_workloads() -> list[str]:
    from profiles import builtin_names

    return builtin_names("workloads")


def load_workload(name_or_path: str | Path) -> Workload:
    """A built-in name (``chat``, ``code``, ``summarize``, ``longdoc``), a YAML file or a replay file."""
    from profiles import profile_path

    text = str(name_or_path)
    path = Path(text)
    if not path.is_file():
        builtin = profile_path("workloads", text)
        if builtin is None:
            raise WorkloadError(
                f"unknown workload {text!r}: not a file and not a built-in; "
                f"built-ins: {', '.join(builtin_workloads())} "
                "(or give a .yaml, .jsonl or ShareGPT .json file)"
            )
        path = builtin
    if path.suffix == ".jsonl":
        return Workload(path.stem, entries=read_jsonl(path), source=str(path))
    if path.suffix == ".json":
        return Workload(path.stem, entries=read_sharegpt(path), source=str(path))
    return _from_yaml(path)


def _from_yaml(path: Path) -> Workload:
    raw, _ = read_yaml(path, WorkloadError)
    if not isinstance(raw, dict):
        raise WorkloadError(f"{path}: expected a mapping of workload fields, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in _FIELDS)
    if unknown:
        raise WorkloadError(f"{path}: unknown field(s) {', '.join(unknown)}; valid: {', '.join(sorted(_FIELDS))}")
    frac = raw.get("shared_prefix_fraction", 0.0)
    if isinstance(frac, bool) or not isinstance(frac, int | float) or not 0.0 <= frac < 1.0:
        raise WorkloadError(f"{path}: shared_prefix_fraction: expected a number in [0, 1), got {frac!r}")
    system = raw.get("system_prompt")
    if system is not None and not isinstance(system, str):
        raise WorkloadError(f"{path}: system_prompt: expected text, got {system!r}")
    name = raw.get("name", path.stem)
    edit = raw.get("edit_instruction")
    if edit is not None and (not isinstance(edit, str) or not edit.strip()):
        raise WorkloadError(f"{path}: edit_instruction: expected text, got {edit!r}")
    entries: tuple[ReplayEntry, ...] = ()
    ds = raw.get("dataset")
    if ds is not None:
        if not isinstance(ds, dict) or not isinstance(ds.get("path"), str) or not ds["path"].strip():
            raise WorkloadError(f"{path}: dataset: expected {{path: FILE, format: jsonl|sharegpt}}, got {ds!r}")
        dpath = Path(ds["path"]) if Path(ds["path"]).is_absolute() else path.parent / ds["path"]
        fmt = ds.get("format", "sharegpt" if dpath.suffix == ".json" else "jsonl")
        if fmt not in ("jsonl", "sharegpt"):
            raise WorkloadError(f"{path}: dataset.format: {fmt!r}; use jsonl or sharegpt")
        if not dpath.is_file():
            raise WorkloadError(f"{path}: dataset.path: no such file {str(dpath)!r}")
        entries = read_jsonl(dpath) if fmt == "jsonl" else read_sharegpt(dpath)
    if "input_tokens" not in raw and not entries:
        raise WorkloadError(f"{path}: input_tokens: missing (or give a dataset to replay)")
    if "output_tokens" not in raw and not entries:
        raise WorkloadError(f"{path}: output_tokens: missing")
    inp = parse_length(f"{path}: input_tokens", raw["input_tokens"], path.parent) if "input_tokens" in raw else None
    out = parse_length(f"{path}: output_tokens", raw["output_tokens"], path.parent) if "output_tokens" in raw else None
    description = str(raw.get("description", ""))
    temp = raw.get("temperature")
    if temp is not None and (isinstance(temp, bool) or not isinstance(temp, int | float) or not 0.0 <= temp <= 2.0):
        raise WorkloadError(f"{path}: temperature: expected a number in [0, 2] or null, got {temp!r}")
    temperature = None if temp is None else float(temp)
    return Workload(str(name), inp, out, float(frac), system, entries, str(path), description, edit, temperature)


def read_jsonl(path: Path) -> tuple[ReplayEntry, ...]:
    """``{"prompt": ...}`` or ``{"messages": [{"role", "content"}...]}``, optional ``output_tokens``."""
    out: list[ReplayEntry] = []
    for n, line in enumerate(read_text(path, WorkloadError, DATASET_MAX_BYTES).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise WorkloadError(f"{where}: not JSON ({e})") from None
        if not isinstance(obj, dict):
            raise WorkloadError(f"{where}: expected an object with 'prompt' or 'messages'")
        ot = obj.get("output_tokens")
        if ot is not None and (isinstance(ot, bool) or not isinstance(ot, int) or ot < 1):
            raise WorkloadError(f"{where}: output_tokens: expected a positive integer, got {ot!r}")
        if isinstance(obj.get("prompt"), str):
            out.append(ReplayEntry(prompt=obj["prompt"], output_tokens=ot))
        elif isinstance(obj.get("messages"), list):
            out.append(ReplayEntry(messages=_messages(where, obj["messages"]), output_tokens=ot))
        else:
            raise WorkloadError(f"{where}: needs 'prompt' (text) or 'messages' (a list)")
    if not out:
        raise WorkloadError(f"{path}: no requests in the file")
    return tuple(out)


def _messages(where: str, msgs: list[Any]) -> tuple[tuple[str, str], ...]:
    res = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise WorkloadError(f"{where}: messages[{i}]: expected {{role: str, content: str}}, got {m!r}")
        res.append((m["role"], m["content"]))
    if not res:
        raise WorkloadError(f"{where}: messages: empty")
    return tuple(res)


def read_sharegpt(path: Path) -> tuple[ReplayEntry, ...]:
    """ShareGPT JSON: the first human turn is the prompt, the first answer fixes the output length."""
    try:
        data = json.loads(read_text(path, WorkloadError, DATASET_MAX_BYTES))
    except ValueError as e:
        raise WorkloadError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, list):
        raise WorkloadError(f"{path}: expected a ShareGPT list of {{conversations: [...]}}")
    out: list[ReplayEntry] = []
    for i, conv in enumerate(data):
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            raise WorkloadError(f"{path}: [{i}].conversations: missing or not a list")
        human = next(
            (t.get("value") for t in turns if isinstance(t, dict) and t.get("from") in ("human", "user")),
            None,
        )
        answer = next(
            (t.get("value") for t in turns if isinstance(t, dict) and t.get("from") in ("gpt", "assistant")),
            None,
        )
        if isinstance(human, str) and human.strip():
            out.append(ReplayEntry(prompt=human, reference_output=answer if isinstance(answer, str) else None))
    if not out:
        raise WorkloadError(f"{path}: no conversation with a human turn")
    return tuple(out)
