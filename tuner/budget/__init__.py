"""The KV-cache budget before anything is launched: GPU profiles, vLLM's memory, calibration and defaults."""
