"""Does bench/kv_tip_draws.py's vllm_client_load send what vLLM's client sends? Runs vLLM's own code (the installed
vllm.benchmarks.serve: CustomDataset over bench/vllm_bench_check.py's dataset, then get_request) in the order its
main_async does, on a fake clock (no server, no waiting), and compares each request's send time and prompt length
with vllm_client_load's for the same seed. CPU, offline; the tokenizer is SmolLM2's.

    PYTHONPATH=. .venv/bin/python results/perfmodel-kv-edge-draws-2026-12-07/check_vllm_arrivals.py /tmp/smollm2 edit 2.345 180 62
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.now += s


async def vllm_sends(requests, rate: float, clock: FakeClock) -> list[tuple[float, int]]:  # type: ignore[no-untyped-def]
    import vllm.benchmarks.serve as serve

    serve.time = clock  # type: ignore[assignment]  # get_request reads time.time() and awaits asyncio.sleep
    serve.asyncio = argparse.Namespace(sleep=clock.sleep)  # type: ignore[assignment]
    return [(clock.now, r.prompt_len) async for r, _ in serve.get_request(requests, rate, 1.0)]


def main() -> int:
    from kv_tip_draws import vllm_client_load
    from vllm.benchmarks.datasets.datasets import CustomDataset
    from vllm_bench_check import load_tokenizer, write_dataset

    from loadtest.workload import load_workload
    from perfmodel.traffic import Demand
    from tuner.search.predict_demand import prompt_overhead

    tok_path, workload_name, rate, seconds, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    workload = load_workload(workload_name)
    count = round(rate * seconds)
    random.seed(seed)  # main_async, before the dataset and the arrivals
    np.random.seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.jsonl"
        write_dataset(path, argparse.Namespace(seed=seed, tokenizer=tok_path, output_tokens=None), workload, count)
        ds = CustomDataset(dataset_path=str(path), disable_shuffle=False, random_seed=seed)
        reqs = ds.sample(tokenizer=load_tokenizer(tok_path), num_requests=count, output_len=-1, skip_chat_template=True)
    theirs = asyncio.run(vllm_sends(reqs, rate, FakeClock()))
    demand = Demand(workload, (), None, prompt_overhead(workload, tok_path))
    ours = vllm_client_load(demand, rate, count, seed)
    dt = max(abs(a - b) for (a, _), b in zip(theirs, ours.offsets_s, strict=True))
    same_len = sum(p == r.prompt_tokens for (_, p), r in zip(theirs, ours.requests, strict=True))
    print(f"{workload_name} seed {seed} at {rate} req/s, {count} requests: largest send-time difference {dt:.2e} s; "
          f"prompt lengths equal in order for {same_len} of {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
