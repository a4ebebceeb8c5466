"""Write measured vLLM runs into ``profiles/calibration/*.yaml``
(the format ``tuner.budget.calibration_points`` reads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# config.json keys a calibration point keeps (enough for ModelSpec.from_config)
SHAPE_KEYS = (
    "architectures",
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
    "torch_dtype",
    "tie_word_embeddings",
    "sliding_window",
    "use_sliding_window",
    "layer_types",
    "num_local_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "n_routed_experts",
    "n_shared_experts",
    "first_k_dense_replace",
    "moe_layer_freq",
    "quantization_config",
)


def shape_of(model_dir: str | Path) -> dict[str, Any]:
    cfg = json.loads((Path(model_dir) / "config.json").read_text())
    return {k: cfg[k] for k in SHAPE_KEYS if k in cfg and cfg[k] is not None}


def append_cpu_points(path: Path, rows: list[dict[str, Any]], version: str) -> None:
    data = yaml.safe_load(path.read_text()) if path.is_file() else None
    data = data or {"device": "cpu", "vllm_version": version, "points": []}
    for r in rows:
        if "shape_config" not in r:
            continue
        reported: dict[str, Any] = {"started": bool(r["started"])}
        if r["reported"] is not None:
            reported["kv_tokens"] = int(r["reported"])
        if not r["started"]:
            reported["error"] = r["error"][:300]
        data["points"].append(
            {
                "source": f"bench/budget_accuracy.py --cpu-runs: {r['case']}",
                "vllm_version": version,
                "device": "cpu",
                "shape": r["shape_config"],
                "settings": {**r["knobs"], "env": {"VLLM_CPU_KVCACHE_SPACE": str(r["space_gib"])}},
                "reported": reported,
            }
        )
    header = (
        "# vLLM-CPU runs on the 2-core dev machine, written by bench/budget_accuracy.py --cpu-runs.\n"
        "# reported.kv_tokens is the log's 'CPU KV cache size: N tokens';\n"
        "# started = /health answered.\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, width=110))
