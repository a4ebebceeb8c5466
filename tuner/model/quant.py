"""config.json's ``quantization_config`` -> Quant: the AWQ, GPTQ, compressed-tensors and fp8 spellings of
bits, group size, zero points and the modules left unquantized."""

from __future__ import annotations

from tuner.errors import ModelSpecError
from tuner.model.config_values import ConfigValues
from tuner.model.shape import Quant


def parse_quant(qc: ConfigValues | None, source: str) -> Quant | None:
    if qc is None:
        return None
    method = str(qc.get("quant_method", "")).lower()
    if method == "awq":
        return Quant(
            "awq",
            qc.whole("bits", default=qc.whole("w_bit", default=4)),
            _group(qc, "group_size", _group(qc, "q_group_size", 128)),
            bool(qc.get("zero_point", True)),
            tuple(qc.get("modules_to_not_convert") or ()),
        )
    if method == "gptq":
        ignore = () if qc.get("lm_head") else ("lm_head",)
        return Quant("gptq", qc.whole("bits", default=4), _group(qc, "group_size", 128), True, ignore, g_idx=True)
    if method == "compressed-tensors":
        groups = [g for g in (qc.get("config_groups") or {}).values() if isinstance(g, dict) and g.get("weights")]
        if not groups:
            raise ModelSpecError(
                f"{source}: quantization_config.config_groups has no 'weights' scheme; the "
                "weight bytes cannot be derived"
            )
        w = ConfigValues(groups[0]["weights"], source, "quantization_config.config_groups.weights")
        strategy = str(w.get("strategy", "group"))
        group = _group(w, "group_size", -1) if strategy == "group" else -1
        return Quant(
            "compressed-tensors",
            w.whole("num_bits", default=4),
            group,
            not bool(w.get("symmetric", True)),
            tuple(qc.get("ignore") or ()),
        )
    if method == "fp8":
        ignored = qc.get("ignored_layers") or qc.get("modules_to_not_convert") or ()
        return Quant("fp8", 8, -1, False, tuple(ignored))
    raise ModelSpecError(
        f"{source}: quantization_config.quant_method {method!r} is not modelled (known: "
        "awq, gptq, compressed-tensors, fp8); weight bytes would be a guess"
    )


def _group(qc: ConfigValues, key: str, default: int) -> int:
    """A quantization group size: weights per group, or -1 (one group per channel)."""
    value = qc.get(key)
    return -1 if value in (-1, -1.0) or (value is None and default == -1) else qc.whole(key, default=default)
