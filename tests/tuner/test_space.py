import optuna
import pytest

from launch.config import ServeConfig
from tuner.search.space import SPECULATION_LEFT_OUT, SpaceContext, model_len_choices, params_of, suggest_config

BASE = ServeConfig(model="/m", served_model_name="m")


def ctx(**kw):
    d = dict(base=BASE, min_model_len=700, model_max_len=8192, is_cpu=False, fp8_kv=True)
    d.update(kw)
    return SpaceContext(**d)


def test_model_len_never_above_model_max_nor_below_workload():
    assert model_len_choices(ctx()) == (768, 1536, 3072)
    assert model_len_choices(ctx(min_model_len=3000, model_max_len=4096)) == (3072, 4096)


def test_suggestions_are_launchable_and_reproducible():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    c = ctx(draft_model="/draft")
    for _ in range(40):
        trial = study.ask()
        cfg = suggest_config(trial, c)
        assert cfg.model == "/m" and cfg.max_model_len >= 700
        assert len(str(cfg.gpu_memory_utilization)) <= 4  # 0.83, not 0.8300000000000001 in flags and files
        if cfg.enable_chunked_prefill is False:
            assert cfg.max_num_batched_tokens >= cfg.max_model_len
        if cfg.speculative_method == "draft":
            assert cfg.speculative_model == "/draft"
        # the params of a config reproduce it when enqueued
        study.tell(trial, 1.0)
        again = optuna.create_study()
        again.enqueue_trial(params_of(cfg, c))
        assert suggest_config(again.ask(), c) == cfg


def test_cpu_space_has_no_gpu_knobs():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    cfg = suggest_config(trial, ctx(is_cpu=True))
    assert cfg.gpu_memory_utilization is None and cfg.kv_cache_dtype is None
    assert "gpu_memory_utilization" not in trial.params


def test_cpu_space_searches_ngram_speculation():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    methods = {suggest_config(study.ask(), ctx(is_cpu=True)).speculative_method for _ in range(40)}
    assert methods == {None, "ngram"}  # no draft model given: no "draft"


@pytest.mark.parametrize(
    "flag, param", [("--kv-cache-dtype", "kv_cache_dtype"), ("--enable-prefix-caching", "enable_prefix_caching")]
)
def test_knobs_the_installed_vllm_lacks_are_left_out(flag, param):
    flags = frozenset(
        {
            "--gpu-memory-utilization",
            "--max-model-len",
            "--max-num-seqs",
            "--kv-cache-dtype",
            "--enable-prefix-caching",
            "--enable-chunked-prefill",
            "--speculative-config",
        }
        - {flag}
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    suggest_config(trial, ctx(flags=flags))
    assert param not in trial.params


def test_variants_are_a_knob():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = set()
    for _ in range(20):
        t = study.ask()
        seen.add(suggest_config(t, ctx(variants={"16bit": "/m", "awq": "/m-awq"})).model)
        study.tell(t, 0.0)
    assert seen == {"/m", "/m-awq"}


def test_parallel_layout_is_a_knob_only_with_several_layouts():
    from tuner.layout import Layout

    layouts = (Layout(1, 1), Layout(2, 1), Layout(1, 2), Layout(2, 2))
    c = ctx(layouts=layouts)
    seen = set()
    for seed in range(12):
        trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed)).ask()
        config = suggest_config(trial, c)
        seen.add((config.tensor_parallel_size, config.data_parallel_size))
        assert trial.params["parallel_layout"] == Layout.of(config).name
        assert params_of(config, c)["parallel_layout"] == trial.params["parallel_layout"]
    assert (None, None) in seen and (2, 2) in seen
    one = optuna.create_study().ask()
    suggest_config(one, ctx(layouts=(Layout(1, 1),)))
    assert "parallel_layout" not in one.params


def test_random_weights_leave_speculation_out_and_say_so():
    # --load-format dummy: a random model accepts no drafted token, so a speculating trial is a wasted launch (on
    # the H200, results/h200-llama-3-8b-a30-predict spent two of its four launches on ngram: 0 drafts accepted)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    dummy = ctx(base=ServeConfig(model="/m", load_format="dummy"), draft_model="/draft")
    trials = [study.ask() for _ in range(40)]
    assert {suggest_config(t, dummy).speculative_method for t in trials} == {None}
    assert not any("speculative_method" in t.params for t in trials)
    assert dummy.notes() == (SPECULATION_LEFT_OUT,) and "--load-format dummy" in SPECULATION_LEFT_OUT
    # real weights keep it, and a vLLM without the flag has nothing to leave out
    assert ctx().searches_speculation() and ctx().notes() == ()
    assert ctx(base=dummy.base, flags=frozenset({"--max-num-seqs"})).notes() == ()


def launched_configs(inp) -> list[ServeConfig]:
    """The configurations a tune of ``inp`` launches, each trial answered at once (rate 1 + its number)."""
    from tuner import pipeline
    from tuner.trial.result import TrialResult

    configs = []

    def fake_run_trial(n, config, baseline, ctx, say, device=None):
        configs.append(config)
        return TrialResult(n, "COMPLETE", baseline, config, slo_met=True, goodput_req_s=1.0 + n, best_rate=1.0 + n)

    pipeline.tune(inp, versions={"vllm": "0.32.0"}, run=fake_run_trial)
    return configs


def test_tune_with_random_weights_states_the_space_on_the_console_and_in_best_json(offline_inputs, tmp_path, capsys):
    import json

    configs = launched_configs(offline_inputs(trials=6, load_format="dummy"))
    assert len(configs) == 6 and not any(c.speculative_method for c in configs)
    assert sum(SPECULATION_LEFT_OUT in line for line in capsys.readouterr().err.splitlines()) == 1
    assert SPECULATION_LEFT_OUT in json.loads((tmp_path / "study" / "best.json").read_text())["notes"]


def test_a_served_dtype_goes_to_every_launch_and_its_kv_budget(offline_inputs, tmp_path):
    """--dtype float32 (a CPU without AVX-512 computes bfloat16 an order of magnitude slower): every trial is
    served in float32, and its KV budget counts 4-byte cache entries where vLLM's auto (bfloat16) counts 2."""
    from dataclasses import replace

    from tuner.search.predict_model import candidate
    from tuner.tune_setup import base_config, trial_context

    inp = offline_inputs(trials=3, dtype="float32")
    configs = launched_configs(inp)
    assert len(configs) == 3 and all(c.dtype == "float32" for c in configs)
    ctx = trial_context(inp, tmp_path / "logs")
    served = candidate(base_config(inp), ctx)
    auto = candidate(replace(base_config(inp), dtype=None), ctx)
    assert served and auto and served.engine.kv_bytes_per_token == 2 * auto.engine.kv_bytes_per_token
