"""A streaming load generator for OpenAI-compatible servers. Never imports torch or vllm."""
