"""``tune``: the command line. Each command is a thin layer over a library call in
``tuner.commands.<name>`` (``configure(parser)`` + ``run(args) -> exit code``).

``tune [--model …]`` with no subcommand runs the main job (tuner.commands.tune).
Exit codes (docs/errors.md): 0 done; 1 no configuration met the SLO, a regression, a failed quality gate,
or a bug (one line naming the log with its traceback: loadtest.crash); 2 bad input (one line naming the
value and the fix, no traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from launch.errors import LaunchError, LaunchInputError
from loadtest.crash import guarded, one_line
from loadtest.errors import LoadtestError, LoadtestInputError
from loadtest.slo import SLOError
from tuner.errors import SlotuneError, UsageError

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


class OneLineParser(argparse.ArgumentParser):
    """argparse's errors as one line (its usage block is what --help is for); exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)}; see '{self.prog} --help'\n")


def _module(name: str):  # noqa: ANN202 - module object
    return importlib.import_module(f"tuner.commands.{name.replace('-', '_')}")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    if command is None:
        parser = OneLineParser(
            prog="tune",
            description="Find the vLLM configuration that keeps every SLO at the highest request rate. "
            "Subcommands: "
            + "; ".join(f"'{k}': {v}" for k, v in SUBCOMMANDS.items())
            + ". Run 'tune SUBCOMMAND --help' for each.",
        )
        _module("tune").configure(parser)
        return parser
    parser = OneLineParser(prog=f"tune {command}", description=SUBCOMMANDS[command])
    _module(command).configure(parser)
    return parser


def _input_errors() -> tuple[type[BaseException], ...]:
    return (UsageError, SLOError, LoadtestInputError, LaunchInputError)


def _failures() -> tuple[type[BaseException], ...]:
    """Expected failures that are not bad input (a quality gate, a server that would not start): exit 1."""
    return (SlotuneError, LaunchError, LoadtestError)


def _run(command: str | None, args: argparse.Namespace, prog: str) -> int:
    try:
        return int(_module(command or "tune").run(args) or 0)
    except _input_errors() as exc:
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except _failures() as exc:
        print(f"{prog}: failed: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print("\n".join(interrupted_lines(prog, exc)), file=sys.stderr)
        return 130


def interrupted_lines(prog: str, exc: KeyboardInterrupt) -> list[str]:
    """What an interrupted command says: nothing left running, and what the interrupted step kept (its notes:
    tuner.certify.certified)."""
    notes = getattr(exc, "__notes__", ())
    return [f"{prog}: interrupted; every server it started has been stopped", *(f"{prog}: {n}" for n in notes)]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    prog = f"tune {command}" if command else "tune"

    def body() -> int:
        args = build_parser(command).parse_args(argv[1:] if command else argv)
        return _run(command, args, prog)

    return guarded(prog, argv, body)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
