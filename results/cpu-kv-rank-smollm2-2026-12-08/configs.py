"""The four configurations of this check (written before any measurement; none was measured in the 2026-12-07 check):
each a change to vLLM's defaults as the study launched them, and the KV tokens it is pinned at (None: the study's own
KV space). One source for predict.py (the model's engine) and phase3.sh (the server's flags, `python configs.py NAME`)."""

import sys

KV_BYTES_PER_TOKEN = 46080  # SmolLM2-135M served in float32: 30 layers x 2 x 3 KV heads x 64 x 4 bytes

CONFIGS = {
    "f-512batch": (dict(max_model_len=2048, max_num_batched_tokens=512), None),
    "g-32x-kv12288": (dict(max_model_len=2048, max_num_seqs=32), 12288),
    "h-64x1024-kv7168": (dict(max_model_len=2048, max_num_seqs=64, max_num_batched_tokens=1024), 7168),
    "i-noprefix-kv4096": (dict(max_model_len=2048, enable_prefix_caching=False), 4096),
}

FLAGS = {
    "max_model_len": "--max-model-len",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
}


def flags(name: str) -> list[str]:
    knobs, tokens = CONFIGS[name]
    out = []
    for k, v in knobs.items():
        if k == "enable_prefix_caching":
            out.append("--enable-prefix-caching" if v else "--no-enable-prefix-caching")
        else:
            out += [FLAGS[k], str(v)]
    if tokens:
        out += ["--kv-cache-memory-bytes", str(tokens * KV_BYTES_PER_TOKEN)]
    return out


if __name__ == "__main__":
    print(" ".join(flags(sys.argv[1])))
