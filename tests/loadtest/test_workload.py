"""Workload profiles, replay files, prompts and arrival schedules."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from loadtest.arrivals import schedule, window_starts
from loadtest.errors import WorkloadError
from loadtest.lengths import parse_length
from loadtest.prompts import PromptFactory
from loadtest.workload import builtin_workloads, load_workload


def fast_tokenizer(folder: Path) -> Any:
    """The class AutoTokenizer resolves to for a synthetic model (its tokenizer_config names it), loaded
    directly: importing AutoTokenizer imports torch, ~10 s of the unit run (the length checks need no torch)."""
    from transformers import PreTrainedTokenizerFast

    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"  # what AutoTokenizer would load
    return PreTrainedTokenizerFast.from_pretrained(str(folder))


def test_builtins_load_with_their_lengths() -> None:
    assert {"chat", "code", "summarize", "longdoc"} <= set(builtin_workloads())
    expect = {"code": 512, "summarize": 2048, "longdoc": 7680}
    for name, mean in expect.items():
        w = load_workload(name)
        assert w.name == name
        rng = random.Random(0)
        got = statistics.mean(w.input_tokens.sample(rng) for _ in range(400))
        assert abs(got - mean) / mean < 0.05
        assert w.max_input_tokens >= mean and w.max_output_tokens >= 1
    assert load_workload("longdoc").max_input_tokens + load_workload("longdoc").max_output_tokens <= 8192


def test_unknown_name_lists_builtins() -> None:
    with pytest.raises(WorkloadError, match="chat, code, edit, edit-greedy, longdoc, summarize"):
        load_workload("nope")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("input_tokens: 10\n", "output_tokens: missing"),
        (
            "input_tokens: {dist: normal, mean: 10, min: 1, max: 20}\noutput_tokens: 4\n",
            r"input_tokens\.std: missing",
        ),
        ("input_tokens: {dist: zipf, max: 3}\noutput_tokens: 4\n", r"input_tokens\.dist: unknown 'zipf'"),
        ("input_tokens: {dist: uniform, min: 9, max: 3}\noutput_tokens: 4\n", "min 9 is greater than max 3"),
        (
            "input_tokens: {dist: lognormal, median: 10, sigma: 1}\noutput_tokens: 4\n",
            r"input_tokens\.max: missing",
        ),
        ("input_tokens: 10\noutput_tokens: -4\n", "output_tokens: must be ≥ 1"),
        ("input_tokens: 10\noutput_tokens: 4\nshared_prefix_fraction: 1.5\n", "shared_prefix_fraction"),
        ("input_tokens: 10\noutput_tokens: 4\nsytem_prompt: hi\n", "unknown field.*sytem_prompt"),
        ("input_tokens: [1, 2\n", "not valid YAML"),
        (
            "input_tokens: {dist: uniform, min: a, max: 3}\noutput_tokens: 4\n",
            r"input_tokens\.min: expected an integer",
        ),
    ],
)
def test_bad_yaml_names_file_and_field(tmp_path: Path, body: str, match: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(body)
    with pytest.raises(WorkloadError, match=match) as e:
        load_workload(p)
    assert str(p) in str(e.value)


def test_length_distributions() -> None:
    rng = random.Random(1)
    u = parse_length("x", {"dist": "uniform", "min": 5, "max": 9})
    assert {u.sample(rng) for _ in range(300)} == set(range(5, 10))
    e = parse_length("x", {"dist": "empirical", "values": [3, 7]})
    assert {e.sample(rng) for _ in range(100)} == {3, 7} and e.max == 7
    ln = parse_length("x", {"dist": "lognormal", "median": 100, "sigma": 2.0, "min": 10, "max": 300})
    xs = [ln.sample(rng) for _ in range(500)]
    assert min(xs) == 10 and max(xs) == 300  # clipped


def test_empirical_from_file(tmp_path: Path) -> None:
    (tmp_path / "lens.jsonl").write_text('{"n": 5}\n{"n": 50}\n')
    (tmp_path / "w.yaml").write_text("input_tokens: {dist: empirical, path: lens.jsonl, field: n}\noutput_tokens: 3\n")
    w = load_workload(tmp_path / "w.yaml")
    assert w.max_input_tokens == 50


def test_jsonl_and_sharegpt_replay(tmp_path: Path) -> None:
    j = tmp_path / "r.jsonl"
    j.write_text(
        json.dumps({"prompt": "hello there", "output_tokens": 7})
        + "\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}]})
        + "\n"
    )
    w = load_workload(j)
    assert w.is_replay and len(w.entries) == 2 and w.max_output_tokens == 256
    f = PromptFactory(w, output_tokens=None)
    assert f.make(0).prompt == "hello there" and f.make(0).output_tokens == 7
    assert PromptFactory(w, chat=True).make(1).messages == [{"role": "user", "content": "hi"}]
    s = tmp_path / "sg.json"
    s.write_text(
        json.dumps([{"conversations": [{"from": "human", "value": "q1"}, {"from": "gpt", "value": "a" * 40}]}])
    )
    w2 = load_workload(s)
    assert PromptFactory(w2).make(0).output_tokens == 10  # 40 chars / 4 without a tokenizer
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n{"nothing": 1}\n')
    with pytest.raises(WorkloadError, match=r"bad\.jsonl:2"):
        load_workload(bad)


def test_synthetic_prompts_are_reproducible_and_distinct() -> None:
    w = load_workload("code")
    a, b = PromptFactory(w, seed=5), PromptFactory(w, seed=5)
    assert [a.make(i) for i in range(5)] == [b.make(i) for i in range(5)]
    p = a.make(0)
    assert len(p.prompt.split()) == p.input_tokens
    firsts = {" ".join(a.make(i).prompt.split()[:16]) for i in range(50)}
    assert len(firsts) == 50  # no two share their first block: no accidental prefix-cache hits


def test_exact_lengths_with_tokenizer(tmp_path: Path) -> None:
    from tuner.synthetic import write_model

    tok = fast_tokenizer(write_model(tmp_path / "m", "llama-tiny", weights=False))
    w = load_workload("chat")
    f = PromptFactory(w, seed=0, tokenizer=tok)
    for i in range(10):
        p = f.make(i)
        assert len(tok.encode(p.prompt, add_special_tokens=False)) == p.input_tokens
        assert w.input_tokens.min <= p.input_tokens <= w.input_tokens.max


@pytest.mark.parametrize("vocab_size", [4096, 128256])  # llama-tiny's; the Llama-3-8B shape's
def test_long_prompts_stay_within_vllms_characters_per_token_bound(tmp_path: Path, vocab_size: int) -> None:
    # vLLM rejects, before tokenizing, prompts of more characters than tokens x its longest token string;
    # whitespace-joined prompts of the synthetic w0..wN vocabulary's longest tokens exceeded it (HTTP 400)
    from tuner.synthetic import write_tokenizer

    write_tokenizer(tmp_path, vocab_size)
    tok = fast_tokenizer(tmp_path)
    longest = max(len(t) for t in tok.get_vocab())  # what vLLM computes (special tokens included)
    (tmp_path / "long.yaml").write_text("input_tokens: 7936\noutput_tokens: 256\n")
    f = PromptFactory(load_workload(tmp_path / "long.yaml"), seed=0, tokenizer=tok)
    for i in range(3):
        p = f.make(i)
        assert len(tok.encode(p.prompt, add_special_tokens=False)) == p.input_tokens == 7936
        assert len(p.prompt) <= 7936 * longest
    assert len(set(f.make(0).prompt.split())) > 900  # still many distinct tokens


def test_shared_prefix(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("input_tokens: 100\noutput_tokens: 2\nshared_prefix_fraction: 0.5\n")
    f = PromptFactory(load_workload(tmp_path / "p.yaml"), seed=1)
    x, y = f.make(0).prompt.split(), f.make(1).prompt.split()
    assert x[:50] == y[:50] and x[50:] != y[50:]


def test_schedules() -> None:
    c = schedule(4.0, count=5, arrival="constant")
    assert c == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    p = schedule(100.0, count=20000, arrival="poisson", seed=1)
    gaps = [b - a for a, b in zip(p, p[1:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(0.01, rel=0.03)
    assert statistics.stdev(gaps) == pytest.approx(0.01, rel=0.05)  # exponential: sd = mean
    g = schedule(100.0, count=20000, arrival="gamma", burstiness=0.25, seed=1)
    ggaps = [b - a for a, b in zip(g, g[1:], strict=False)]
    assert statistics.mean(ggaps) == pytest.approx(0.01, rel=0.05)
    assert statistics.stdev(ggaps) == pytest.approx(0.02, rel=0.1)  # cv = 1/sqrt(shape) = 2
    assert schedule(100.0, count=50, seed=3) == schedule(100.0, count=50, seed=3)
    d = schedule(10.0, duration_s=2.0, arrival="constant")
    assert len(d) == 20 and max(d) < 2.0


def test_edit_prompts_carry_an_english_passage_to_copy() -> None:
    from loadtest.prompts import PromptFactory

    w = load_workload("edit")
    assert w.edit_instruction and w.max_output_tokens < w.input_tokens.max
    factory = PromptFactory(w, seed=3)
    first, second = factory.make(0), factory.make(1)
    assert first.prompt.startswith(w.edit_instruction) and first.prompt != second.prompt
    assert first.prompt == PromptFactory(w, seed=3).make(0).prompt  # reproducible from (seed, index)
    passage = first.prompt.split("\n\n", 1)[1]
    assert passage.endswith(".") and len(passage.split()) >= w.input_tokens.min // 2
    chat = PromptFactory(w, seed=3, chat=True).make(0)
    assert chat.messages[-1]["content"] == first.prompt


def test_edit_instruction_must_be_text(tmp_path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("input_tokens: 10\noutput_tokens: 10\nedit_instruction: 3\n")
    with pytest.raises(WorkloadError, match="edit_instruction"):
        load_workload(bad)


def test_a_workload_may_fix_the_sampling_temperature_and_every_request_then_sends_it(tmp_path) -> None:
    import json

    from loadtest.client import build_body

    greedy, default = load_workload("edit-greedy"), load_workload("edit")
    assert greedy.temperature == 0.0 and default.temperature is None
    assert greedy.edit_instruction == default.edit_instruction
    sent = json.loads(build_body("m", "completions", "hi", None, 8, ignore_eos=True, temperature=greedy.temperature))
    assert sent["temperature"] == 0.0
    assert "temperature" not in json.loads(build_body("m", "completions", "hi", None, 8, ignore_eos=True))
    for bad in ("-0.1", "2.5", "true", "hot"):
        (tmp_path / "w.yaml").write_text(f"input_tokens: 10\noutput_tokens: 10\ntemperature: {bad}\n")
        with pytest.raises(WorkloadError, match=r"temperature: expected a number in \[0, 2\]"):
            load_workload(tmp_path / "w.yaml")


def test_a_rate_window_sends_the_nominal_rate_and_keeps_the_gaps_shape() -> None:
    # free gaps: seed 41 sends 479 requests in 180 s at 2.48 req/s (7 % over); in 30-s windows, 2.48 x 180
    assert len(schedule(2.48, duration_s=180, seed=41)) == 479
    w = schedule(2.48, duration_s=180, seed=41, rate_window_s=30)
    assert len(w) == 446
    n = round(2.48 * 30)  # 74 arrivals a window, each window starting at k x 74 / 2.48 s
    assert [w[k * n] for k in range(6)] == pytest.approx([k * n / 2.48 for k in range(6)])
    for seed in range(20):  # 4 whole windows (296 arrivals, 119.35 s), then the draw's first 0.65 s of the fifth
        assert 296 < len(schedule(2.48, duration_s=120, seed=seed, rate_window_s=30)) <= 302
    p = schedule(100.0, count=20000, seed=1, rate_window_s=30)  # Poisson given its count: still exponential gaps
    gaps = [b - a for a, b in zip(p, p[1:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(0.01, rel=0.01)
    assert statistics.stdev(gaps) == pytest.approx(0.01, rel=0.05)
    g = schedule(100.0, count=20000, arrival="gamma", burstiness=0.25, seed=1, rate_window_s=30)
    ggaps = [b - a for a, b in zip(g, g[1:], strict=False)]
    assert statistics.stdev(ggaps) == pytest.approx(0.02, rel=0.1)  # the bursts stay
    assert schedule(4.0, count=5, arrival="constant", rate_window_s=30) == schedule(4.0, count=5, arrival="constant")
    huge = schedule(1e6, count=100, seed=1, rate_window_s=30)  # a window no longer than the run: 100 gaps, not 3e7
    assert len(huge) == 100 and huge[-1] < 100 / 1e6
    with pytest.raises(ValueError, match="rate_window_s"):
        schedule(1.0, count=5, rate_window_s=0)


def test_the_rate_window_is_the_runs_planned_span_at_least_30_s() -> None:
    from loadtest.spec import LoadSpec, rate_window_s

    wl = load_workload("chat")
    base = dict(url="http://h:1", model="m", workload=wl)
    assert rate_window_s(LoadSpec(**base, rate=2.48, duration_s=180), 2.48) == 180  # as vLLM's client spans its run
    assert rate_window_s(LoadSpec(**base, rate=2.0, requests=400), 2.0) == 200
    assert rate_window_s(LoadSpec(**base, rate=40.0, requests=160), 40.0) == 30  # a short level: 30-s windows
    assert rate_window_s(LoadSpec(**base, rate=2.0, requests=400, exact_count=False), 2.0) is None


def test_windows_after_the_first_are_next_window_s_long() -> None:
    # a 120-s soak's schedule: its span (281 arrivals at 2.345 req/s), then windows of round(2.345 x 30) = 70
    span = 281 / 2.345
    starts = window_starts(2.345, duration_s=240.0, rate_window_s=span, next_window_s=30.0)
    assert starts == [0, 281, 351, 421, 491, 561]  # up to the 564 arrivals 240 s may need
    w = schedule(2.345, duration_s=240.0, seed=62, rate_window_s=span, next_window_s=30.0)
    assert [w[k] for k in starts] == pytest.approx([k / 2.345 for k in starts])  # each window at the nominal rate
    assert schedule(2.345, duration_s=240.0, seed=62, rate_window_s=span)[:282] == w[:282]  # the first window as before
    assert window_starts(2.345, duration_s=240.0, rate_window_s=span) == [0, 281, 562]  # default: all as long
    assert window_starts(2.345, count=281, rate_window_s=span, next_window_s=30.0) == [0, 281]
    assert window_starts(2.345, count=20, rate_window_s=30.0, next_window_s=30.0) == [0, 20]  # capped to the run
    assert window_starts(2.345, count=281) is None  # free gaps: no window
    assert window_starts(2.345, count=281, arrival="constant", rate_window_s=30.0) is None  # already exact
    with pytest.raises(ValueError, match="next_window_s"):
        schedule(1.0, count=5, rate_window_s=30, next_window_s=0)


def test_the_windows_after_the_first_are_30_s_unless_gaps_are_free() -> None:
    from loadtest.spec import MIN_RATE_WINDOW_S, LoadSpec, next_rate_window_s

    base = dict(url="http://h:1", model="m", workload=load_workload("chat"), rate=2.0, requests=400)
    assert next_rate_window_s(LoadSpec(**base)) == MIN_RATE_WINDOW_S == 30  # type: ignore[arg-type]
    assert next_rate_window_s(LoadSpec(**base, exact_count=False)) is None  # type: ignore[arg-type]
