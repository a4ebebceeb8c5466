"""Owns vLLM server processes: config → command, start, read back, classify failures, stop."""
