"""model_fingerprint: a hash of what a model *is* — config, tokenizer, weights index and weight bytes —
so a same-shape weight change is detected. Cached by (path, size, mtime_ns) per file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

CACHE = Path(os.environ.get("SLOTUNE_CACHE", Path.home() / ".cache" / "slotune")) / "fingerprints.json"
META = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
        "special_tokens_map.json", "vocab.json", "merges.txt", "model.safetensors.index.json",
        "pytorch_model.bin.index.json", "quantization_config.json")
WEIGHTS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")


def _file_hash(path: Path, cache: dict[str, str]) -> str:
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    if key not in cache:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        cache[key] = h.hexdigest()
    return cache[key]


def model_fingerprint(model_dir: str | Path) -> str:
    """sha256 over the model's metadata files and weight files (name + content)."""
    root = Path(model_dir)
    try:
        cache = json.loads(CACHE.read_text())
    except (OSError, ValueError):
        cache = {}
    files = [root / n for n in META if (root / n).is_file()]
    files += sorted({p for pattern in WEIGHTS for p in root.glob(pattern) if p.is_file()})
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + _file_hash(path, cache).encode() + b"\n")
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        tmp = CACHE.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache))
        os.replace(tmp, CACHE)
    except OSError:
        pass  # the cache only saves time
    return "sha256:" + h.hexdigest()
