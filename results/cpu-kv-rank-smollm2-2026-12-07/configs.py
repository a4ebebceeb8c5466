"""The five configurations of this check (written before any measurement): each a change to vLLM's defaults as the
study launched them, and the KV tokens it is pinned at (None: the study's own KV space). One source for predict.py
(the model's engine) and phase3.sh (the server's flags, via `python configs.py NAME`)."""

import sys

KV_BYTES_PER_TOKEN = 23040  # SmolLM2-135M: 30 layers x 2 x 3 KV heads x 64 x 2 bytes (vLLM-CPU reports the same)

CONFIGS = {
    "a-256x1024": (dict(max_model_len=2048, max_num_seqs=256, max_num_batched_tokens=1024), None),
    "b-kv10240": (dict(max_model_len=2048), 10240),
    "c-64x2048-kv8192": (dict(max_model_len=3072, max_num_seqs=64, max_num_batched_tokens=2048), 8192),
    "d-noprefix-kv6144": (dict(max_model_len=2048, enable_prefix_caching=False), 6144),
    "e-256x1024-kv3072": (dict(max_model_len=2048, max_num_seqs=256, max_num_batched_tokens=1024), 3072),
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
