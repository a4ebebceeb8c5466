"""Do the two load clients see the same server? An A/B against one running server at one Poisson rate:
slotune's `loadtest` with continuous usage stats (its default: the token count on every chunk), without
them (as vLLM's client sends), and vLLM's own benchmark client (bench/vllm_bench_check.py), interleaved
A B C C B A so that a drift of the server or the machine falls on every variant alike. Each run draws its own
prompts (until 2026-12-04 they repeated, and all runs but the first of a seed hit the prefix cache).

Prints one line per run (p95 TTFT, completed req/s, client CPU) and each variant's mean. On a 2-core
machine the client shares the cores with vLLM-CPU: what a client costs the server shows as TTFT.

    python bench/client_ab.py --url http://127.0.0.1:8000 --model NAME --tokenizer MODEL_DIR \
        --rate 28 --seconds 60 --output-tokens 64
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from client_cost import client_args, ours, theirs  # noqa: E402

VARIANTS = {
    "slotune, continuous usage": lambda a, s, o, seed: ours(a, s, o, seed),
    "slotune, final usage only": lambda a, s, o, seed: ours(a, s, o, seed, ("--no-continuous-usage",)),
    "vllm bench serve": theirs,
}


def main() -> None:
    p = client_args(__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    args = p.parse_args()
    order = [*VARIANTS, *reversed(VARIANTS)]
    seen: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for k, name in enumerate(order):
            r = VARIANTS[name](args, args.seconds, Path(tmp) / f"run-{k}.json", seed=100 + k)  # no prompt twice
            seen[name].append(r)
            print(
                f"{name:26s} {args.rate:g} req/s for {args.seconds:g} s: p95 TTFT {r['ttft_p95_ms']:.0f} ms "
                f"(p95 schedule lag {r['lag_p95_ms']:.0f} ms), "
                f"{r['throughput_req_s']:.2f} req/s done, client CPU {r['cpu_s'] / r['requests'] * 1000:.1f} ms "
                f"per request",
                flush=True,
            )
    for name, runs in seen.items():
        ttft = statistics.mean(r["ttft_p95_ms"] for r in runs)
        done = statistics.mean(r["throughput_req_s"] for r in runs)
        print(f"{name}: mean p95 TTFT {ttft:.0f} ms, mean {done:.2f} req/s done ({len(runs)} runs)")


if __name__ == "__main__":
    main()
