"""The quantization subprocess: ``python -m tuner.quantize.worker --job JOB.json --result RESULT.json``.

Runs under the quantization interpreter (scripts/install-quantize.sh), never under vLLM's: it imports
only the standard library, torch, transformers, the backend's library and its stdlib/torch helpers
``tuner.quantize.text``, ``tuner.quantize.metrics`` and the backend module — ``tuner.quantize.llmc``
(llm-compressor, the default) or ``tuner.quantize.awq`` (AutoAWQ, deprecated). The parent
(tuner.quantize.api) writes the job, relays the ``slotune-quant:`` progress lines from stderr and reads
the result; the process exits before vLLM starts, so the memory it used is free again.

Steps: held-out reference log-probs of the 16-bit model → AWQ + W4A16 group quantization → per-layer
output cosine; layers under ``restore_below`` join ``ignore`` and the model is re-quantized (mixed
precision), up to ``max_rounds`` → save → reload the saved directory and compare it with the
reference (NLL, KL, top-1). The gate's verdict is the parent's job (tuner.quantize.gate).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch

from tuner.quantize import text
from tuner.quantize.metrics import compare_logprobs, reference_logprobs

ERROR_PREFIX = "slotune-quant-error: "  # the worker's last word on a failure, read by tuner.quantize.interpreter
_UNK_LIMIT = 0.3  # English calibration text is unusable when more of its tokens than this are <unk>
_RANDOM_LEN = 256  # tokens per random-token sequence (synthetic vocabularies)
# vLLM fuses these sibling projections into one layer, which needs one quantization scheme for all
# of them: a restored layer takes its siblings with it
_FUSED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"), ("w1", "w3"))
_WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth", ".safetensors.index.json", ".bin.index.json")


def progress(message: str) -> None:
    print(f"slotune-quant: {message}", file=sys.stderr, flush=True)


def _backend(name: str) -> Any:
    # each backend's library is installed in its own interpreter (Makefile: install-llmc, install-awq)
    if name == "llmcompressor":
        from tuner.quantize import llmc

        return llmc
    if name == "autoawq":
        from tuner.quantize import awq

        return awq
    raise ValueError(f"unknown backend {name!r}")


def _load(model_dir: str, device: str | None, dtype: str) -> Any:
    from transformers import AutoModelForCausalLM

    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype, device_map=device)


def _sequences(tokenizer: Any, job: dict) -> tuple[list[torch.Tensor], list[torch.Tensor], str]:
    """Calibration and held-out token sequences, and which source the calibration came from."""
    max_len, n_cal, n_held, seed = job["max_seq_len"], job["samples"], job["held_out"], job["seed"]

    def encode(texts: list[str]) -> list[torch.Tensor]:
        enc = [tokenizer(t, truncation=True, max_length=max_len)["input_ids"] for t in texts]
        return [torch.tensor(ids) for ids in enc if len(ids) > 1]

    english_held = encode(text.held_out_texts(n_held, seed=seed + 1))
    unk = tokenizer.unk_token_id
    n_tok = sum(len(s) for s in english_held)
    unk_frac = 0.0 if unk is None else sum(int((s == unk).sum()) for s in english_held) / max(1, n_tok)
    if unk_frac <= _UNK_LIMIT:
        held, source = english_held, "builtin-english"
        calib = None if job["calib_texts"] is None else encode(job["calib_texts"])
        calib = calib or encode(text.calibration_texts(n_cal, seed=seed))
    else:  # a synthetic vocabulary: random ids, calibration and held-out from different seeds
        special = set(tokenizer.all_special_ids)
        valid = [i for i in range(len(tokenizer)) if i not in special]
        length = min(_RANDOM_LEN, max_len)
        held = [torch.tensor(s) for s in text.random_token_ids(valid, n_held, length, seed + 1)]
        source = "builtin-random-tokens"
        calib = None if job["calib_texts"] is None else encode(job["calib_texts"])
        calib = calib or [torch.tensor(s) for s in text.random_token_ids(valid, n_cal, length, seed)]
    if job["calib_texts"] is not None:
        source = "user"
        held += encode(job["held_out_texts"] or [])
    return calib, held, source


def _siblings(name: str, names: dict[str, float]) -> list[str]:
    prefix, _, leaf = name.rpartition(".")
    for group in _FUSED:
        if leaf in group:
            return [n for n in (f"{prefix}.{g}" if prefix else g for g in group) if n in names]
    return [name]


def _pick_restored(low: list[tuple[float, str]], cosines: dict[str, float], budget: int) -> list[str]:
    """Worst layers first, each with its fused siblings, while they fit in ``budget``."""
    picked: list[str] = []
    for _, name in low:
        group = [n for n in _siblings(name, cosines) if n not in picked]
        if group and len(picked) + len(group) <= budget:
            picked.extend(group)
    return picked


def _quantize_with_restoration(
    backend: Any,
    job: dict,
    calib: list[torch.Tensor],
    held: list[torch.Tensor],
) -> tuple[Any, dict[str, float], dict[str, float], list[str]]:
    """Quantize; restore layers whose output cosine is under ``restore_below`` and re-quantize."""
    recipe = job["recipe"]
    ignore: list[str] = list(recipe["ignore"])
    restored: dict[str, float] = {}
    total = None
    for round_no in range(1, recipe["max_rounds"] + 1):
        progress(
            f"round {round_no}: {backend.NAME} AWQ W{recipe['bits']}A16 group {recipe['group_size']} on "
            f"{len(calib)} calibration samples ({len(ignore)} modules left 16-bit)"
        )
        model, cosines = backend.quantize_once(job, calib, held, ignore)
        total = total or len(cosines)
        low = sorted((c, n) for n, c in cosines.items() if c < recipe["restore_below"])
        worst = f"; lowest {min(cosines.values()):.5f}" if cosines else ""
        progress(
            f"round {round_no}: {len(cosines)} quantized Linear layers, {len(low)} under "
            f"{recipe['restore_below']}{worst}"
        )
        budget = math.floor(recipe["max_restore_fraction"] * total) - len(restored)
        if not low or round_no == recipe["max_rounds"] or budget <= 0:
            return model, cosines, restored, ignore
        picked = _pick_restored(low, cosines, budget)
        if not picked:
            return model, cosines, restored, ignore
        restored.update((n, cosines[n]) for n in picked)
        ignore.extend(picked)
        progress(f"restoring to 16-bit: {', '.join(picked)}")
        del model
    raise AssertionError("unreachable")


def _save(backend: Any, model: Any, tokenizer: Any, job: dict) -> None:
    out, src = Path(job["out_dir"]), Path(job["model_dir"])
    backend.save(model, out)
    tokenizer.save_pretrained(out)
    for f in src.iterdir():  # chat templates, processor configs, licences … (not the 16-bit weights)
        if f.is_file() and not (out / f.name).exists() and not f.name.endswith(_WEIGHT_FILES):
            shutil.copy2(f, out / f.name)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for p in ("torch", "transformers", "llmcompressor", "compressed-tensors", "autoawq"):
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            pass
    return out


def run(job: dict) -> dict:
    from transformers import AutoTokenizer

    backend = _backend(job.get("backend", "llmcompressor"))
    backend.prepare()
    torch.manual_seed(job["seed"])
    device = "cuda" if torch.cuda.is_available() else None
    t0 = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(job["model_dir"])
    calib, held, source = _sequences(tokenizer, job)
    progress(
        f"{len(calib)} calibration sequences ({source}), {len(held)} held-out sequences "
        f"({sum(len(s) for s in held)} tokens)"
    )
    base = _load(job["model_dir"], device, backend.EVAL_DTYPE)
    reference = reference_logprobs(base, held)
    del base
    t_ref = time.monotonic()
    model, cosines, restored, ignore = _quantize_with_restoration(backend, job, calib, held)
    t_quant = time.monotonic()
    progress(f"saving to {job['out_dir']}")
    _save(backend, model, tokenizer, job)
    del model
    if job.get("damage"):
        backend.damage(Path(job["out_dir"]), job["damage"])
        progress(f"DAMAGED the saved weights ({job['damage']}) on request (test seam)")
    progress("reloading the saved model and comparing it with the 16-bit model on held-out text")
    metrics = compare_logprobs(backend.load_quantized(job, device), held, reference)
    progress(
        f"ppl {metrics['ppl_base']:.4g} -> {metrics['ppl_quant']:.4g}, "
        f"KL {metrics['kl_divergence']:.4g}, top-1 agreement {metrics['top1_agreement']:.4f}"
    )
    return {
        "metrics": metrics,
        "layer_cosine": cosines,
        "restored_layers": list(restored),
        "restored_cosine": restored,
        "ignore": ignore,
        "calibration_source": source,
        "calibration_samples": len(calib),
        "held_out_sequences": len(held),
        "backend": backend.NAME,
        "timings_s": {"reference": t_ref - t0, "quantize": t_quant - t_ref, "total": time.monotonic() - t0},
        "device": device or "cpu",
        "versions": _versions(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuner.quantize.worker")
    p.add_argument("--job", required=True, help="job JSON written by tuner.quantize.api")
    p.add_argument("--result", required=True, help="where to write the result JSON")
    args = p.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    try:
        result = run(job)
    except Exception as exc:  # one line for the user (tuner.quantize.interpreter); the traceback stays in the log
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"{ERROR_PREFIX}{type(exc).__name__}: {first[:400]}", file=sys.stderr, flush=True)
        raise
    Path(args.result).write_text(json.dumps(result, indent=1))
    progress("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
