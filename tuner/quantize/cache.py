"""Reuse of finished quantizations: a key from the model's contents, the recipe and the calibration data.

The key hashes (1) a fingerprint of the model directory — config, tokenizer and the *contents* of the
weight files, so a model updated in place (same shapes, new weights) gets a new key and is
re-quantized; (2) the recipe; (3) the calibration data (the user's file bytes, or the built-in
generator's version). Each finished output directory carries a manifest (``MANIFEST``) with its key
and measurements; with a ``cache_dir`` a copy is also kept under ``cache_dir/<key>/``.

TODO(main): replace ``model_fingerprint`` with ``launch.fingerprint.model_fingerprint`` once it lands.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

MANIFEST = "slotune-quantize.json"
_CHUNK = 8 << 20
_SKIP_SUFFIXES = (".md", ".lock", ".log")


def model_fingerprint(model_dir: str | Path) -> str:
    """sha256 over each top-level file's name and bytes (hidden files, *.md, logs, our manifest skipped)."""
    h = hashlib.sha256()
    for f in sorted(Path(model_dir).iterdir()):
        if not f.is_file() or f.name.startswith(".") or f.name.endswith(_SKIP_SUFFIXES) or f.name == MANIFEST:
            continue
        h.update(f.name.encode() + b"\0")
        with f.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def file_hash(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def cache_key(fingerprint: str, recipe: dict[str, Any], calibration: str, extra: dict[str, Any]) -> str:
    """A short stable key; ``extra`` holds everything else that changes the output (backend, samples…)."""
    blob = json.dumps({"model": fingerprint, "recipe": recipe, "calibration": calibration, **extra}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((out_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "key" in data else None


def _complete(out_dir: Path) -> bool:
    return (out_dir / "config.json").is_file() and any(out_dir.glob("*.safetensors"))


def lookup(out_dir: Path, cache_dir: Path | None, key: str) -> dict[str, Any] | None:
    """The manifest of a finished quantization with ``key``, now present in ``out_dir``; else None.

    ``out_dir`` itself is checked first; then ``cache_dir/<key>``, which is copied into ``out_dir``.
    """
    found = read_manifest(out_dir)
    if found and found["key"] == key and _complete(out_dir):
        return found
    if cache_dir is None:
        return None
    entry = cache_dir / key
    found = read_manifest(entry)
    if not (found and found["key"] == key and _complete(entry)):
        return None
    replace_dir(out_dir, entry, copy=True)
    return found


def store(out_dir: Path, cache_dir: Path, key: str) -> None:
    """Copy a finished ``out_dir`` to ``cache_dir/<key>`` (atomically; an existing entry is kept)."""
    entry = cache_dir / key
    if read_manifest(entry) is not None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".{key}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(out_dir, tmp)
    try:
        tmp.rename(entry)
    except OSError:  # another process stored it first
        shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(target: Path, source: Path, *, copy: bool = False) -> None:
    """Put ``source``'s contents at ``target`` (moved, or copied with ``copy``), replacing ``target``."""
    staging = source
    if copy:
        staging = target.with_name(f".{target.name}.copy-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
