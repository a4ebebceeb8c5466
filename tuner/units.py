"""Units the budget, the GPU profiles and the reports share (no imports: any module may use them)."""

GIB = 1 << 30  # bytes in a GiB: vLLM states memory in GiB (2**30), never in GB
