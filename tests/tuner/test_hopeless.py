"""A trial that its saturation probe shows cannot win is PRUNED after the probe (tuner.trial.measuring)."""

from __future__ import annotations

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.model.spec import ModelSpec
from tuner.synthetic import shape_config
from tuner.trial.capacity import CapacityResult, MeasurePlan
from tuner.trial.context import TrialContext
from tuner.trial.measuring import HOPELESS_FACTOR, hopeless_check, running_capacity
from tuner.trial.runner import run_trial
from tuner.trial.testing import FakeLauncher


def _ctx(best, gpu="h200", **kw) -> TrialContext:
    return TrialContext(
        spec=None,
        gpu=GPUProfile.load(gpu),
        slos=(),
        workload=None,
        plan=MeasurePlan(probe_concurrency=128),
        python="py",
        log_dir=None,
        vllm_version="0.26.0",
        best_capacity=lambda: best,
        **kw,
    )


def test_the_rule() -> None:
    few = ServeConfig(model="m", max_num_seqs=16)
    check = hopeless_check(few, _ctx(60.0), is_baseline=False)
    assert check(60.0 / HOPELESS_FACTOR + 0.1) is None
    why = check(11.3)
    assert why.startswith("hopeless:") and "11.30 req/s" in why and "max_num_seqs 16" in why and "60.00" in why
    assert hopeless_check(few, _ctx(None), is_baseline=False)(0.1) is None  # nothing measured yet
    assert hopeless_check(few, _ctx(60.0), is_baseline=True) is None  # the defaults are always measured
    # more sequences than the probe sends: the probe cannot fill the server, so it bounds nothing
    assert hopeless_check(ServeConfig(model="m", max_num_seqs=256), _ctx(60.0), is_baseline=False) is None
    # unset: vLLM's default for the GPU (1024 on an H200, 256 on an A30) -- more than the probe sends
    assert hopeless_check(ServeConfig(model="m"), _ctx(60.0), is_baseline=False) is None
    assert hopeless_check(ServeConfig(model="m"), _ctx(60.0, gpu="a30"), is_baseline=False) is None


def test_a_kv_bound_server_is_judged_by_what_fits() -> None:
    from loadtest.workload import load_workload

    ctx = TrialContext(**{**_ctx(60.0, gpu="a30").__dict__, "workload": load_workload("longdoc")})
    defaults = ServeConfig(model="m")  # 256 sequences on an A30, but its KV cache holds ~6 of 8k tokens
    assert running_capacity(defaults, ctx, None) == 256
    assert running_capacity(defaults, ctx, 48_256) == 5  # longest request: 7936 + 256 tokens
    assert running_capacity(ServeConfig(model="m", max_num_seqs=4), ctx, 252_000) == 4
    plan = ctx.plan.fitted(5)
    check = hopeless_check(defaults, ctx, False, 5, plan.probe_concurrency)
    assert check is not None and check(60.0 / HOPELESS_FACTOR + 0.1) is None
    why = check(2.0)
    assert "max_num_seqs 256 (5 of the longest requests fit its KV cache)" in why
    # without the read-back, 256 sequences are more than the probe sends: it cannot tell
    assert hopeless_check(defaults, ctx, False) is None


def _stand_in_server(ctx: TrialContext, tmp_path, measure) -> TrialContext:
    """run_trial's launch and measurement stand-ins (a model of a feasible budget): what is under test is
    what it does with the measurement."""
    tiny = ModelSpec.from_config(shape_config("llama-tiny"))
    return TrialContext(
        **{**ctx.__dict__, "spec": tiny, "log_dir": tmp_path, "launcher": FakeLauncher(), "measure": measure}
    )


def test_run_trial_stores_it_as_pruned_with_the_reason(tmp_path) -> None:
    got = {}

    def fake_measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        got["hopeless"] = hopeless
        why = hopeless(5.0) if hopeless else None
        return CapacityResult(5.0, None, None, None, (), abandoned=why)

    ctx = _stand_in_server(_ctx(60.0), tmp_path, fake_measure)
    r = run_trial(3, ServeConfig(model="m", max_num_seqs=4), False, ctx)
    assert r.state == "PRUNED" and r.fail_reason.startswith("hopeless:") and r.saturation_req_s == 5.0
    r = run_trial(0, ServeConfig(model="m", max_num_seqs=4), True, ctx)  # the baseline: measured in full
    assert got["hopeless"] is None and r.state == "COMPLETE"


def test_the_study_hands_each_trial_the_best_capacity_so_far(offline_inputs) -> None:
    from tuner import pipeline
    from tuner.trial.result import TrialResult

    inp = offline_inputs(trials=3)
    seen, goodputs = [], {0: 10.0, 1: 14.0, 2: 3.0}

    def fake_run_trial(n, config, baseline, ctx, say, device=None):
        seen.append(ctx.best_capacity())
        return TrialResult(
            number=n,
            state="COMPLETE",
            is_baseline=baseline,
            config=config,
            slo_met=True,
            goodput_req_s=goodputs[n],
            best_rate=goodputs[n],
        )

    # non-empty versions: {} would run the real version probe; the trials are stand-ins
    pipeline.tune(inp, versions={"vllm": "0.32.0"}, run=fake_run_trial)
    assert seen == [None, 10.0, 14.0]


def test_a_level_with_failed_requests_says_what_the_server_answered(tmp_path) -> None:
    from tuner.trial.level import Level

    def fake_measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        on_level(
            Level(
                "rate",
                0.5,
                None,
                False,
                0.3,
                0.4,
                {"ttft_p95": None},
                3,
                failures={"http_400": 2, "abandoned": 1},
                failure_example="http_400: prompt too long",
            )
        )
        return CapacityResult(1.0, None, None, None, ())

    said = []
    run_trial(
        1,
        ServeConfig(model="m", max_num_seqs=4),
        False,
        _stand_in_server(_ctx(None), tmp_path, fake_measure),
        said.append,
    )
    line = next(m for m in said if m.startswith("rate 0.50/s"))
    assert line.endswith("; 2 request(s) failed (http_400: 2; first: http_400: prompt too long)"), line
