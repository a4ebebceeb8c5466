"""tune on the CPU says when this CPU computes bfloat16 far slower than float32 and vLLM would serve the model in
bfloat16 (launch.cpu_dtype), and names the fix."""

from __future__ import annotations

import sys

from launch.cpu_dtype import SLOW_BF16_FACTOR, bf16_slowdown, slow_bf16_note
from tuner.inputs import with_cpu_dtype_note


def test_a_slow_bfloat16_cpu_gets_a_note_that_names_the_fix(offline_inputs):
    inp = offline_inputs(trials=1)  # the tiny Llama's checkpoint is bfloat16; vLLM's auto serves it so
    noted = with_cpu_dtype_note(inp, timer=lambda python: 9.0)
    (note,) = set(noted.notes) - set(inp.notes)
    assert "9x slower than float32" in note and "--dtype float32" in note
    assert with_cpu_dtype_note(inp, timer=lambda python: SLOW_BF16_FACTOR - 0.5).notes == inp.notes
    assert with_cpu_dtype_note(inp, timer=lambda python: None).notes == inp.notes  # not timed: nothing claimed


def test_no_timing_where_the_model_is_not_served_in_bfloat16(offline_inputs):
    def must_not_time(python: str) -> float:
        raise AssertionError("timed bfloat16 for a float32 launch")

    inp = offline_inputs(trials=1, dtype="float32")
    assert with_cpu_dtype_note(inp, timer=must_not_time).notes == inp.notes


def test_the_timing_runs_in_the_given_interpreter():
    slowdown = bf16_slowdown(sys.executable)
    assert slowdown is not None and slowdown > 0
    assert bf16_slowdown("/nonexistent/python") is None
    assert slow_bf16_note(None) is None and slow_bf16_note(1.0) is None
    assert slow_bf16_note(10.0) is not None
