"""bench/trial_launch.py serves a study's non-winning trial as the study's own launch.sh serves its winner: for trial 5
of the second SmolLM2 sitting, the server it starts is the one its hand-derived check ran (make-launch.sh)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.trial_launch import write_trial_launch

ROOT = Path(__file__).resolve().parents[2]
SITTING = ROOT / "results" / "cpu-predict-rank-smollm2-2026-12-05-b"


def _body(text: str, python: str) -> list[str]:
    """launch.sh without its comments, the lines naming the interpreter (another clone's), and its watcher and the
    lines feeding it (since 2026-12-06 it times the pace, launch.pace, and vLLM no longer sees VLLM_PYTHON: neither
    changes the server started)."""
    start = text.index('"$VLLM_PYTHON" - "$HOST" "$PORT" "$SERVED_NAME"')
    text = text[:start] + text[text.index("\nSLOTUNE_PY\n", start) :]
    since = ("#", "MEASURED_PACE=", "PACE_TOLERANCE=", "export -n VLLM_PYTHON")
    return [line for line in text.splitlines() if line and not line.startswith(since) and python not in line]


def test_a_non_winning_trial_is_served_as_its_hand_derived_check_served_it(tmp_path: Path) -> None:
    trial = write_trial_launch(SITTING / "rank", 5, tmp_path, vllm_python=sys.executable)
    assert (trial.config.max_num_seqs, trial.config.max_num_batched_tokens) == (512, 2048)
    derived = subprocess.run(
        ["bash", str(SITTING / "crosscheck-512x2048" / "make-launch.sh")], capture_output=True, text=True, check=True
    ).stdout
    ours = (tmp_path / "launch.sh").read_text()
    assert _body(ours, sys.executable) == _body(derived, "/work/main/.venv/bin/python")
    assert "trial 5 of" in ours
    assert (tmp_path / "best.json").read_bytes() == (SITTING / "rank" / "best.json").read_bytes()


def test_a_trial_the_study_does_not_hold_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no trial 9; stored trials: \\[0, 1, 2, 3, 4, 5\\]"):
        write_trial_launch(SITTING / "rank", 9, tmp_path, vllm_python=sys.executable)
