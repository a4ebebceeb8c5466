"""Progress after each trial: k/N and an ETA while the search runs; a trial past --trials (a speculating best's twin,
run after the search) is counted as one after the search, never as "3/2"."""

from __future__ import annotations

import io
import re

import optuna

from tuner.certify.summary import Summary
from tuner.search.progress import Progress

NOTHING = Summary(best=None, baseline=None, closest=(), top=(), gain_over_baseline=None, baseline_note="")


def progress_lines(finished_trials: int, total: int) -> list[str]:
    study = optuna.create_study()
    stream = io.StringIO()
    progress = Progress(total, stream)
    for _ in range(finished_trials):
        study.add_trial(optuna.trial.create_trial(value=1.0))
        progress.trial_done(study, NOTHING)
    return [re.sub(r"^\[[\d:]+\] \[trial -\] ", "", line) for line in stream.getvalue().splitlines()]


def test_the_search_counts_k_of_n_with_an_eta_and_a_trial_after_it_is_counted_apart() -> None:
    lines = progress_lines(3, 2)
    assert lines[0].startswith("1/2 finished; no config has met the SLO yet; ETA ")
    assert lines[1].startswith("2/2 finished; no config has met the SLO yet; ETA 0.0 min")
    assert lines[2] == "3 finished, 1 after the search's 2; no config has met the SLO yet"
