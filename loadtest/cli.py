"""``loadtest``: measure an OpenAI-compatible server. Exit 0 measured; 2 bad input (one line on stderr,
checked before any request, outputs included); 1 the server is unreachable or a bug (loadtest.crash)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from loadtest.crash import guarded, one_line
from loadtest.errors import LoadtestError, LoadtestInputError, ServerUnreachable
from loadtest.slo import SLOError, parse_slos
from loadtest.writable import check_output_file


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        self.exit(2, f"{self.prog}: error: {one_line(message)}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="loadtest", description="Streaming load test of an OpenAI-compatible server.")
    p.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", required=True, help="model name as served (also the tokenizer if it is a directory)")
    p.add_argument("--workload", default="chat", help="built-in name, workload YAML, replay .jsonl or ShareGPT .json")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    load.add_argument("--concurrency", type=int, help="closed loop: requests in flight (default 1)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--requests", type=int, help="number of measured requests (default 100)")
    size.add_argument("--duration", type=float, help="seconds to keep sending")
    p.add_argument("--output-tokens", type=int, help="fix every answer's length (max_tokens + ignore_eos)")
    p.add_argument("--warmup", type=int, default=0, help="requests sent first and left out of the results")
    p.add_argument("--seed", type=int, default=0, help="reproduces prompts and the arrival schedule")
    p.add_argument("--slo", help="e.g. ttft_p95=2s,tpot_p95=80ms (goodput counts requests meeting all)")
    p.add_argument("--tokenizer", help="tokenizer for exact prompt lengths (default: --model if it is a directory)")
    p.add_argument("--arrival", default="poisson", help="poisson | constant | gamma (open loop)")
    p.add_argument("--burstiness", type=float, default=1.0, help="gamma shape: 1 = Poisson, <1 burstier")
    p.add_argument(
        "--free-count",
        action="store_true",
        help="open loop: do not scale the random gaps so that the run sends exactly rate x its span "
        "(vLLM's own client scales them); the count sent then varies with the draw",
    )
    p.add_argument("--endpoint", default="completions", help="completions | chat")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before a request counts as timed out")
    p.add_argument("--no-server-metrics", action="store_true", help="do not scrape the server's /metrics")
    p.add_argument(
        "--no-continuous-usage",
        action="store_true",
        help="do not ask for the token count on every chunk (vLLM's own client does not); counts are then spread",
    )
    p.add_argument("--json", type=Path, help="write the report as JSON here")
    p.add_argument("--per-request", type=Path, help="write one JSON line per request (raw timestamps) here")
    return p


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    return guarded("loadtest", args_list, lambda: _main(build_parser().parse_args(args_list)))


def _main(args: argparse.Namespace) -> int:
    try:
        spec = _spec(args)
        for path, flag in ((args.json, "--json"), (args.per_request, "--per-request")):
            if path is not None:
                check_output_file(path, flag)  # before the run: its results must not be lost at the end
        from loadtest.runner import run_load

        report = run_load(spec)
    except ServerUnreachable as e:
        print(f"loadtest: {one_line(str(e))}", file=sys.stderr)
        return 1
    except (LoadtestInputError, SLOError) as e:
        print(f"loadtest: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except LoadtestError as e:
        print(f"loadtest: {one_line(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("loadtest: interrupted", file=sys.stderr)
        return 130
    from loadtest.report import cached_prompts_note, format_table

    print(format_table(report))
    if not spec.workload.is_replay:  # a replay's prompts may share prefixes for real (conversations)
        note = cached_prompts_note(report, spec.workload.shared_prefix_fraction, spec.seed)
        if note:
            print(f"loadtest: {note}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    if args.per_request:
        with args.per_request.open("w") as f:
            for r in report.records:
                f.write(json.dumps(r.to_dict()) + "\n")
    return 0


def _spec(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from loadtest.runner import LoadSpec
    from loadtest.workload import load_workload

    tokenizer = args.tokenizer or (args.model if Path(args.model).is_dir() else None)
    return LoadSpec(
        url=args.url,
        model=args.model,
        workload=load_workload(args.workload),
        rate=args.rate,
        concurrency=args.concurrency if args.rate is not None or args.concurrency is not None else 1,
        requests=args.requests if args.requests is not None or args.duration is not None else 100,
        duration_s=args.duration,
        output_tokens=args.output_tokens,
        warmup=args.warmup,
        seed=args.seed,
        slos=parse_slos(args.slo) if args.slo else (),
        tokenizer=tokenizer,
        arrival=args.arrival,
        burstiness=args.burstiness,
        exact_count=not args.free_count,
        endpoint=args.endpoint,
        timeout_s=args.timeout,
        scrape_server_metrics=not args.no_server_metrics,
        continuous_usage=not args.no_continuous_usage,
    )


if __name__ == "__main__":
    sys.exit(main())
