"""The quantization quality gate: thresholds, the frozen QualityReport and the verdict (pure).

The worker (tuner.quantize.worker) measures; this module judges, so that a cached measurement is
re-judged with the thresholds of the current run. Defaults (``GateThresholds()``):

    nll_delta       ≤ 0.10  nats/token  (perplexity at most ×1.105 on held-out text)
    kl_divergence   ≤ 0.10  nats/token  KL(16-bit ‖ quantized), mean over held-out positions
    top1_agreement  ≥ 0.50  share of positions where both models pick the same next token
    layer cosine    ≥ 0.98  every still-quantized Linear, after the restoration rounds

Why these numbers: sound 4-bit AWQ of real 7–8B models costs roughly 0.02–0.07 nats/token and
keeps 0.85–0.95 top-1 agreement; a broken quantization (wrong scales, garbage packed weights) costs
whole nats. A random-weight tiny model predicts an almost uniform next-token distribution, so its
top-1 choice is a near tie and a sound quantization agrees only ~0.6 of the time (measured: see
docs/quantize.md); 0.50 keeps such models passing while a damaged one (agreement near 1/vocab) fails.
Tighten the thresholds for production models (``tune quantize --max-kl 0.05 --min-top1 0.85``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class GateThresholds:
    max_nll_delta: float = 0.10
    max_kl: float = 0.10
    min_top1: float = 0.50
    min_layer_cosine: float = 0.98

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class QualityReport:
    """The quantized model against its 16-bit original on held-out text, and the gate's verdict."""

    ppl_base: float
    ppl_quant: float
    nll_delta: float
    kl_divergence: float
    top1_agreement: float
    layer_cosine: dict[str, float]
    restored_layers: tuple[str, ...]
    gate: Literal["pass", "fail"]
    thresholds: GateThresholds
    reasons: tuple[str, ...] = ()
    restored_cosine: dict[str, float] = field(default_factory=dict)
    tokens: int = 0

    @property
    def min_layer_cosine(self) -> float | None:
        return min(self.layer_cosine.values()) if self.layer_cosine else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "reasons": list(self.reasons),
            "ppl_base": self.ppl_base,
            "ppl_quant": self.ppl_quant,
            "nll_delta": self.nll_delta,
            "kl_divergence": self.kl_divergence,
            "top1_agreement": self.top1_agreement,
            "min_layer_cosine": self.min_layer_cosine,
            "layer_cosine": dict(self.layer_cosine),
            "restored_layers": list(self.restored_layers),
            "restored_cosine": dict(self.restored_cosine),
            "held_out_tokens": self.tokens,
            "thresholds": self.thresholds.to_dict(),
        }

    def summary(self) -> str:
        """One line: verdict and the numbers."""
        cos = self.min_layer_cosine
        text = (
            f"gate {self.gate}: perplexity {self.ppl_base:.4g} -> {self.ppl_quant:.4g} "
            f"(NLL delta {self.nll_delta:+.4f}), KL {self.kl_divergence:.4f}, "
            f"top-1 agreement {self.top1_agreement:.3f}, min layer cosine "
            f"{'n/a' if cos is None else f'{cos:.4f}'}, "
            f"{len(self.restored_layers)} layer(s) restored to 16-bit"
        )
        return text + ("" if not self.reasons else " — " + "; ".join(self.reasons))


def judge(measured: dict[str, Any], thresholds: GateThresholds) -> QualityReport:
    """A QualityReport from the worker's measurements (``metrics``, ``layer_cosine``, ``restored_*``)."""
    m = measured["metrics"]
    cosines = {str(k): float(v) for k, v in measured["layer_cosine"].items()}
    t = thresholds
    reasons = []
    if m["nll_delta"] > t.max_nll_delta:
        reasons.append(f"NLL delta {m['nll_delta']:.4f} > {t.max_nll_delta}")
    if m["kl_divergence"] > t.max_kl:
        reasons.append(f"KL {m['kl_divergence']:.4f} > {t.max_kl}")
    if m["top1_agreement"] < t.min_top1:
        reasons.append(f"top-1 agreement {m['top1_agreement']:.3f} < {t.min_top1}")
    low = sorted((c, n) for n, c in cosines.items() if c < t.min_layer_cosine)
    if low:
        reasons.append(
            f"{len(low)} layer(s) with output cosine < {t.min_layer_cosine} (worst {low[0][1]}: {low[0][0]:.4f})"
        )
    return QualityReport(
        ppl_base=float(m["ppl_base"]),
        ppl_quant=float(m["ppl_quant"]),
        nll_delta=float(m["nll_delta"]),
        kl_divergence=float(m["kl_divergence"]),
        top1_agreement=float(m["top1_agreement"]),
        layer_cosine=cosines,
        restored_layers=tuple(measured["restored_layers"]),
        gate="fail" if reasons else "pass",
        thresholds=thresholds,
        reasons=tuple(reasons),
        restored_cosine={str(k): float(v) for k, v in measured.get("restored_cosine", {}).items()},
        tokens=int(m.get("tokens", 0)),
    )
