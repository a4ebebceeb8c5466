"""``--try-first``: the configurations a user names are checked against the search space (one line, exit 2,
before anything is written) and measured right after vLLM's defaults, before the sampler's own."""

from __future__ import annotations

import io

import pytest

from launch.config import ServeConfig
from tuner.errors import UsageError
from tuner.search.progress import Progress
from tuner.search.space import SpaceContext, knob_choices
from tuner.search.tries import announce, sampled_knobs, tried_params
from tuner.settings.fields import check_setting

CPU = SpaceContext(base=ServeConfig(model="/m"), min_model_len=600, model_max_len=8192, is_cpu=True)


def test_named_knobs_become_the_params_the_space_would_suggest():
    got = tried_params(
        "speculative_method=ngram,num_speculative_tokens=3; max_num_seqs=64,enable_prefix_caching=false", CPU
    )
    assert got == [
        {"speculative_method": "ngram", "num_speculative_tokens": 3},
        {"max_num_seqs": 64, "enable_prefix_caching": False},
    ]
    assert type(got[0]["num_speculative_tokens"]) is int and got[1]["enable_prefix_caching"] is False
    assert tried_params("max_model_len=768", CPU) == [{"max_model_len": 768}]  # the workload's 600 rounded up
    assert tried_params(None, CPU) == [] and tried_params("", CPU) == []


def test_a_named_token_budget_keeps_chunked_prefill_on():
    # the sampler once drew enable_chunked_prefill=false for "max_num_batched_tokens=8192" and launched 2560
    assert tried_params("max_num_seqs=64,max_num_batched_tokens=2048", CPU) == [
        {"max_num_seqs": 64, "max_num_batched_tokens": 2048, "enable_chunked_prefill": True}
    ]


def test_the_knobs_left_to_the_sampler_are_named_and_every_named_one_is_an_exact_point():
    # the committed CPU grid's best point once ran with the sampler's ngram k=2 and max_model_len 2560
    (partial,) = tried_params("max_num_seqs=256,max_num_batched_tokens=2048", CPU)
    assert sampled_knobs(partial, CPU) == [
        "max_model_len",
        "enable_prefix_caching",
        "speculative_method",
        "num_speculative_tokens",
    ]
    assert "the sampler picks max_model_len, enable_prefix_caching, speculative_method" in announce(partial, CPU)
    (exact,) = tried_params(
        "max_num_seqs=256,max_num_batched_tokens=2048,max_model_len=3072,enable_prefix_caching=true,"
        "speculative_method=off",
        CPU,
    )
    assert sampled_knobs(exact, CPU) == [] and "one exact configuration" in announce(exact, CPU)
    (unchunked,) = tried_params("enable_chunked_prefill=false", CPU)  # its token budget is moot, not sampled
    assert "max_num_batched_tokens" not in sampled_knobs(unchunked, CPU)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("max_num_seqs=100", "max_num_seqs=100: not a value this space searches; it has 4, 8, 16"),
        ("kv_cache_dtype=fp8", "'kv_cache_dtype': not a knob of this search space"),  # not on the CPU profile
        ("speculative_method=draft", "it has off, ngram"),  # no --draft-model given
        ("num_speculative_tokens=3", "num_speculative_tokens needs speculative_method=ngram"),
        ("enable_chunked_prefill=false,max_num_batched_tokens=2048", "needs enable_chunked_prefill=true"),
        ("max_model_len=512", "it has 768, 1536, 3072"),  # shorter than the workload's longest request
    ],
)
def test_a_value_the_space_could_never_propose_is_refused_with_its_choices(text, needle):
    with pytest.raises(UsageError, match="--try-first") as info:
        tried_params(text, CPU)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_the_choices_follow_what_the_space_can_do_here():
    gpu = SpaceContext(
        base=ServeConfig(model="/m"), min_model_len=600, model_max_len=8192, is_cpu=False, fp8_kv=True, draft_model="/d"
    )
    assert knob_choices(gpu)["kv_cache_dtype"] == ("auto", "fp8") and "draft" in knob_choices(gpu)["speculative_method"]
    assert (
        knob_choices(gpu)["gpu_memory_utilization"][0] == 0.8
        and knob_choices(gpu)["gpu_memory_utilization"][-1] == 0.96
    )
    assert tried_params("gpu_memory_utilization=0.9", gpu) == [{"gpu_memory_utilization": 0.9}]
    no_spec = SpaceContext(
        base=ServeConfig(model="/m"), min_model_len=600, model_max_len=8192, is_cpu=True, speculative=False
    )
    with pytest.raises(UsageError, match="not a knob"):
        tried_params("speculative_method=ngram", no_spec)


@pytest.mark.parametrize("text", ["ngram", "speculative_method==ngram", "a=1,b", ";"])
def test_text_that_is_not_knob_value_pairs_is_refused_as_a_setting(text):
    with pytest.raises(UsageError, match="--try-first") as info:
        check_setting("try_first", text)
    assert "KNOB=VALUE" in str(info.value)


def test_the_tried_configuration_runs_right_after_the_defaults(offline_inputs):
    from tuner import pipeline
    from tuner.trial.result import TrialResult

    inp = offline_inputs(trials=3, try_first="speculative_method=ngram,num_speculative_tokens=3")
    ran: list[ServeConfig] = []

    def fake_run_trial(n, config, baseline, ctx, say, device=None):
        ran.append(config)
        return TrialResult(n, "COMPLETE", baseline, config, slo_met=True, goodput_req_s=1.0 + n, best_rate=1.0 + n)

    said = io.StringIO()
    pipeline.tune(inp, versions={"vllm": "0.32.0"}, run=fake_run_trial, progress=Progress(3, stream=said))
    assert "--try-first: speculative_method=ngram, num_speculative_tokens=3; the sampler picks" in said.getvalue()
    assert ran[0].speculative_method is None  # vLLM's defaults first
    assert ran[1].speculative_method == "ngram" and ran[1].num_speculative_tokens == 3
    assert len(ran) == 3  # the tried configuration counts against --trials


def test_try_first_with_predict_is_refused_before_anything_is_written(offline_inputs, tmp_path):
    from tuner import pipeline

    out = tmp_path / "study"
    inp = offline_inputs(predict=True, try_first="max_num_seqs=64")
    with pytest.raises(UsageError, match="--try-first and --predict"):
        pipeline.tune(inp, versions={"vllm": "0.32.0"})
    assert not out.exists()
