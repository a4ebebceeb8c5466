"""``tune``: the command line. Each command is a thin layer over a library call in
``tuner.commands.<name>`` (``configure(parser)`` + ``run(args) -> exit code``).

``tune [--model …]`` with no subcommand runs the main job (tuner.commands.tune).
Bad input raises UsageError (or a loadtest/launch input error): one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS = {
    "budget": "predict KV-cache memory and feasibility from config.json and a GPU profile",
    "quantize": "quantize a model to 4-bit AWQ with a quality gate",
    "retune": "re-check or re-tune a finished study after a model or vLLM change",
    "init": "write a commented slotune.yaml project file",
    "demo": "tune a real 135M instruct model (SmolLM2, built offline) on real vLLM (no GPU needed)",
    "make-model": "write a synthetic model (real shape, random weights), or build a real one offline (--from)",
    "export": "write the winner of a study as Compose, Kubernetes, KServe or Helm (production-stack) YAML",
    "cost": "$ per million output tokens of a study's winner and of vLLM's defaults",
}


def _module(name: str):  # noqa: ANN202 - module object
    return importlib.import_module(f"tuner.commands.{name.replace('-', '_')}")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    if command is None:
        parser = argparse.ArgumentParser(
            prog="tune",
            description="Find the vLLM configuration with the most goodput that keeps every SLO. "
            "Subcommands: "
            + "; ".join(f"'{k}': {v}" for k, v in SUBCOMMANDS.items())
            + ". Run 'tune SUBCOMMAND --help' for each.",
        )
        _module("tune").configure(parser)
        return parser
    parser = argparse.ArgumentParser(prog=f"tune {command}", description=SUBCOMMANDS[command])
    _module(command).configure(parser)
    return parser


def _input_errors() -> tuple[type[BaseException], ...]:
    from loadtest.errors import LoadtestInputError
    from loadtest.slo import SLOError
    from tuner.errors import UsageError

    errors: list[type[BaseException]] = [UsageError, SLOError, LoadtestInputError]
    try:
        from launch.errors import LaunchInputError

        errors.append(LaunchInputError)
    except ImportError:  # pragma: no cover - during bootstrap only
        pass
    return tuple(errors)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    parser = build_parser(command)
    args = parser.parse_args(argv[1:] if command else argv)
    try:
        return int(_module(command or "tune").run(args) or 0)
    except _input_errors() as exc:
        print(f"tune: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tune: interrupted; every server it started has been stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
