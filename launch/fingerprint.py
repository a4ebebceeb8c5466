"""A model directory's fingerprint: sha256 over the files that decide what the server computes.

Covered (top level of the directory): every ``*.json`` (config, generation config, tokenizer
config, weights index, quantization config), tokenizer files, remote code (``*.py``) and the
*contents* of every weight file (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``, ``*.gguf``),
so re-quantizing or fine-tuning into same-shaped weights changes it. Not covered: README, images,
subdirectories (e.g. Meta's ``original/`` checkpoint copy).

``hash_model_dir`` is standard library only: launch.sh embeds its source so a serving host
without slotune computes the same value. ``model_fingerprint`` wraps it with a per-file cache
keyed by (absolute path, size, mtime_ns) in ``$SLOTUNE_CACHE_DIR/file-digests.json``, so a 15 GB
model is read once and later calls stat it only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from launch.vllm_info import cache_dir


def hash_model_dir(model_dir: str, file_digest: Callable[[str], str] | None = None) -> str:
    """sha256 hex over (name, size, content digest) of the model's relevant files, sorted by name."""
    import hashlib

    def content_digest(path: str) -> str:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        return h.hexdigest()

    suffixes = (".json", ".safetensors", ".bin", ".pt", ".pth", ".gguf", ".model", ".tiktoken", ".txt", ".jinja", ".py")
    digest = file_digest or content_digest
    names = sorted(
        n
        for n in os.listdir(model_dir)
        if n.endswith(suffixes) and not n.startswith(".") and os.path.isfile(os.path.join(model_dir, n))
    )
    if not any(n == "config.json" for n in names):
        raise FileNotFoundError(f"{model_dir} has no config.json: not a model directory")
    total = hashlib.sha256(b"slotune-model-fingerprint-v1\n")
    for name in names:
        path = os.path.join(model_dir, name)
        total.update(f"{name}\0{os.path.getsize(path)}\0{digest(path)}\n".encode())
    return total.hexdigest()


class _DigestCache:
    """Per-file content digests remembered by (path, size, mtime_ns)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.entries: dict[str, list[object]] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.entries = {}
        self.dirty = False

    def digest(self, file: str) -> str:
        import hashlib

        st = os.stat(file)
        key = os.path.abspath(file)
        hit = self.entries.get(key)
        if hit is not None and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return str(hit[2])
        h = hashlib.sha256()
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        self.entries[key] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
        self.dirty = True
        return h.hexdigest()

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(self.entries))
        tmp.replace(self.path)


def model_fingerprint(model_dir: str | Path) -> str:
    """``hash_model_dir`` with cached per-file digests; raises FileNotFoundError without config.json."""
    cache = _DigestCache(cache_dir() / "file-digests.json")
    try:
        return hash_model_dir(str(model_dir), cache.digest)
    finally:
        cache.save()
