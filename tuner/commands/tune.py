"""``tune``: the main job. Settings come from flags > slotune.yaml > built-in defaults."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.certify.headline import CONFIRMED, headline
from tuner.inputs import load_inputs, with_cpu_dtype_note
from tuner.out_dir import claimed
from tuner.quantize_step import maybe_quantize
from tuner.settings.fields import FIELDS
from tuner.settings.project import find_project_file, read_project_file
from tuner.settings.tune_settings import TuneSettings, resolve

if TYPE_CHECKING:
    from tuner.certify.confirm import Confirmation
    from tuner.certify.headline import Headline
    from tuner.report.outputs import Summary


def configure(p: argparse.ArgumentParser) -> None:
    for name, f in FIELDS.items():
        flag = "--" + name.replace("_", "-")
        text = f.help.replace("%", "%%")  # argparse formats help with %: a field's "5 %" is text
        if f.type is bool:
            p.add_argument(flag, dest=name, action="store_true", default=None, help=text)
            continue
        # no type=: the text is checked by tuner.settings.fields.check_setting, as the file's values are
        p.add_argument(
            flag,
            dest=name,
            default=None,
            help=text + (f" (default: {f.default})" if f.default is not None else ""),
        )
    p.add_argument("--resume", action="store_true", default=None, help="continue the study in --out/--storage")
    p.add_argument("--config", help="project file (default: ./slotune.yaml when present)")


def settings_from_args(args: argparse.Namespace) -> TuneSettings:
    path = find_project_file(args.config)
    values: dict[str, Any] = read_project_file(path) if path else {}
    flags = {k: v for k, v in vars(args).items() if k != "config"}
    settings = resolve(values, flags, source=str(path) if path else "")
    return settings if path is None else replace(settings, config_file=str(path))


def print_outcome(
    out: Path, summary: Summary, slo: str, confirmation: Confirmation | None = None, head: Headline | None = None
) -> None:
    """The final lines: the study's headline (tuner.certify.headline: the same capacity and gain as every file; by
    default that of a study without certifications), the --confirm re-measurements, and where the files are."""
    head = head or headline(summary, {}, confirmation)
    if summary.best is None:
        print(
            f"No configuration met {slo} at any tested load; closest configs in {out / 'report.html'}; "
            "no launch.sh written."
        )
        return
    print(head.line())
    if head.single_measurement:
        print(
            "note: that gain rests on a single measurement of the best or of the defaults, and single measurements "
            "of one configuration can differ by 20 % or more (results/README.md, 'Search quality so far'); "
            "certification (--soak-seconds) or --confirm 2 re-measures both on fresh servers"
        )
    if head.held_unconfirmed:
        print(
            f"warning: every rate that held {slo} on a fresh server missed on another: what this configuration "
            "sustains differs between servers by more than the soaks' steps here, so nothing is certified "
            "(report.html lists each soak and why)"
        )
    elif head.certification_failed:
        print(
            f"warning: no soak held {slo} on a fresh server down to the search's lowest passing rate: the search's "
            "short levels overstate what this configuration sustains (report.html lists each soak and why)"
        )
    if confirmation is not None:
        print(confirmation.line(gain=head.basis == CONFIRMED))
        if confirmation.gain_on_means is None or confirmation.gain_on_means <= 0:
            print(
                f"warning: on fresh servers the best did not beat {confirmation.rival_name}: the search's margin "
                "is within measurement noise here (more --confirm rounds or longer --level-seconds tell more)"
            )
    print(f"launch script: {out / 'launch.sh'}")
    print(f"report:        {out / 'report.html'}")
    print(f"study:         {out} (trials.csv, best.json)")


def run(args: argparse.Namespace) -> int:
    # Optuna and pandas load only once a run starts: --help and bad flags answer at once
    from tuner.pipeline import tune
    from tuner.search.study import check_storage
    from tuner.tune_setup import check_resume, storage_url

    settings = settings_from_args(args)
    with claimed(settings.out_dir()):
        check_storage(storage_url(settings), resume=settings.resume)
        inputs = with_cpu_dtype_note(load_inputs(settings))
        check_resume(inputs)
        quantized = maybe_quantize(settings, inputs)
        outcome = tune(inputs, quantized=quantized)
    print_outcome(outcome.out, outcome.summary, settings.slo, outcome.confirmation, outcome.headline)
    return outcome.exit_code
