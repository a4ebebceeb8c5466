"""tuner.search.departures: of the configurations the model cannot tell apart (within its 2 % bisection), tune
--predict launches the one that moves the fewest engine settings from vLLM's own choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.config import ServeConfig
from loadtest.slo import parse_slos
from loadtest.workload import load_workload
from perfmodel.rank import Prediction
from tuner.search.departures import UNRESOLVED, closest_to_defaults
from tuner.search.predict_model import perf_model
from tuner.search.predict_queue import Queue
from tuner.trial.capacity import MeasurePlan

M = ServeConfig(model="/m")


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """``departures`` as tune --predict resolves it: a Llama-shaped model on an A30 (vLLM's 256 seqs, 2,048 tokens)."""
    from tuner.budget.gpu import GPUProfile
    from tuner.model.spec import ModelSpec
    from tuner.synthetic import shape_config
    from tuner.trial.context import TrialContext

    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    ctx = TrialContext(spec, GPUProfile.load("a30"), parse_slos("ttft_p95=2s"), load_workload("chat"),
                       MeasurePlan(), "py", Path(tmp_path_factory.mktemp("logs")), vllm_version="0.26.0")  # fmt: skip
    return perf_model(ctx).departures


def cfg(**knobs) -> ServeConfig:
    return ServeConfig(model="/m", **knobs)


def test_vllms_own_values_spelled_out_move_nothing(moved):
    assert moved(M) == 0
    spelled = cfg(gpu_memory_utilization=0.92, max_num_seqs=256, max_num_batched_tokens=2048,
                  enable_chunked_prefill=True, enable_prefix_caching=True, kv_cache_dtype="auto")  # fmt: skip
    assert moved(spelled) == 0


@pytest.mark.parametrize(
    ("knobs", "count"),
    [
        ({"max_num_seqs": 512}, 1),
        ({"max_num_seqs": 512, "kv_cache_dtype": "fp8"}, 2),
        ({"enable_prefix_caching": False}, 1),
        ({"max_num_batched_tokens": 512}, 1),
        ({"gpu_memory_utilization": 0.85}, 1),
        # without chunked prefill vLLM sizes the batch by the prompt: the batch size is not a second departure
        ({"enable_chunked_prefill": False, "max_num_batched_tokens": 8192}, 1),
        ({"max_model_len": 1280}, 1),
        # run e's fp8 launch, and the A30 grid's best beside it (the same batch limits, vLLM's chunking and caching)
        (
            {
                "max_num_seqs": 512,
                "kv_cache_dtype": "fp8",
                "enable_chunked_prefill": False,
                "enable_prefix_caching": False,
                "max_num_batched_tokens": 2048,
                "max_model_len": 1280,
            },
            5,
        ),
        ({"max_num_seqs": 512, "kv_cache_dtype": "fp8", "max_model_len": 1280}, 3),  # fmt: skip
    ],
)
def test_each_setting_moved_from_vllms_choice_counts_once(moved, knobs, count):
    assert moved(cfg(**knobs)) == count


def pred(capacity, **knobs) -> Prediction:
    return Prediction(cfg(**knobs), capacity, capacity, None)


def seqs_moved(config: ServeConfig) -> int:
    """A stand-in count: how far max_num_seqs is from 256, in doublings."""
    return {None: 0, 256: 0, 128: 1, 512: 1, 64: 2, 1024: 2}[config.max_num_seqs]


def test_the_closest_to_the_defaults_of_the_unresolved_ties_goes_first():
    preds = [pred(100.0, max_num_seqs=1024), pred(99.0, max_num_seqs=512), pred(98.5, max_num_seqs=256)]
    assert closest_to_defaults(preds, seqs_moved, lambda p: p.capacity_req_s) is preds[2]
    q = Queue(tuple(preds), (), seqs_moved)
    assert q.next(0, None) is preds[2]
    assert q.without(preds[2].config).next(1, None) is preds[1]  # then the next closest among the ties left


def test_a_prediction_the_model_resolves_as_better_is_not_traded_for_fewer_departures():
    top, below = pred(100.0, max_num_seqs=1024), pred(100.0 * (1 - UNRESOLVED) - 0.01, max_num_seqs=256)
    assert closest_to_defaults([top, below], seqs_moved, lambda p: p.capacity_req_s) is top
    equal = [pred(100.0, max_num_seqs=512), pred(99.5, max_num_seqs=128)]  # one departure each: the higher figure
    assert closest_to_defaults(equal, seqs_moved, lambda p: p.capacity_req_s) is equal[0]


def test_an_uncalibrated_kv_dtype_launches_the_closest_of_its_bytes_scaled_ties():
    """Run e's case: fp8 unchunked without prefix caching ranked 0.2 % above fp8 with vLLM's chunking and caching."""

    def fp8(scaled, **knobs):
        return Prediction(cfg(kv_cache_dtype="fp8", **knobs), None, None, None, unseen="fp8 not calibrated",
                          scaled_req_s=scaled)  # fmt: skip

    moved_fp8 = fp8(77.281, max_num_seqs=1024)
    kept = fp8(77.149, max_num_seqs=256)
    far = fp8(70.0)
    q = Queue.of([pred(76.0, max_num_seqs=512), moved_fp8, kept, far], set(), seqs_moved)
    assert q.unseen == (kept,)
    assert Queue.of([moved_fp8, kept], set()).unseen == (moved_fp8,)  # no count given: the ranking's order
