"""``tune retune``: re-verify a finished study; re-tune when the model or vLLM changed (issue #8)."""

from __future__ import annotations

import argparse

from tuner.errors import UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("NOT IMPLEMENTED YET: will re-measure the frozen config when nothing changed and re-tune "
                     "(warm-started) when the model or the serving stack changed.")
    p.add_argument("--study", help="study folder with best.json (default: from slotune.yaml)")
    p.add_argument("--trials", type=int)
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    raise UsageError("tune retune is not implemented yet (issue #8); no result was produced")
