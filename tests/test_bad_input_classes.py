"""Issue #25's classes of bad input and faults, each re-tried through the command line in-process: one line
on stderr naming the value, what is valid and the fix; exit 2; no traceback; nothing started or written.

Each case is tagged with its class (A secrets … I outputs); the fault classes that need a study or a
server are in tests/tuner/test_resume_faults.py, tests/launch/ and tests/test_fault_kill.py.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from loadtest.cli import main as loadtest_main
from tuner.cli import main as tune_main


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    from tuner.synthetic import write_model

    return write_model(tmp_path / "m", "llama-tiny", weights=False)


@pytest.fixture()
def no_vllm(tmp_path: Path) -> Path:
    """An interpreter that fails at once: a case reaching the vLLM probe would exit 2 with another message."""
    path = tmp_path / "no-vllm"
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return path


def run(main, args: list[str]) -> int:
    """A CLI's exit code in-process (argparse's own errors end in SystemExit)."""
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)


def with_config(model: Path, cfg_change: dict) -> Path:
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(cfg_change)
    (model / "config.json").write_text(json.dumps(cfg))
    return model


BASE = ["--gpu", "cpu", "--slo", "ttft_p95=2s"]

# (class, extra flags, needles): the flag values of classes D and E that were accepted or ended in a traceback
FLAG_CASES = [
    ("E", ["--level-seconds", "-5"], ["--level-seconds '-5'", "> 0 and ≤ 3,600", "e.g. --level-seconds 8"]),
    ("E", ["--level-seconds", "nan"], ["--level-seconds 'nan'", "> 0"]),
    ("E", ["--startup-timeout", "-1"], ["--startup-timeout '-1'", "e.g. --startup-timeout 900"]),
    ("E", ["--output-tokens", "-3"], ["--output-tokens '-3'", "from 1 to"]),
    ("E", ["--time-budget", "-1"], ["--time-budget '-1'", "> 0"]),
    ("E", ["--trials", "0"], ["--trials '0'", "from 1 to 100000"]),
    ("E", ["--trials", "2.5"], ["--trials '2.5'", "whole number"]),
    ("E", ["--seed", "-1"], ["--seed '-1'"]),
    ("E", ["--confirm", "-1"], ["--confirm '-1'"]),
    ("E", ["--devices", "0,x"], ["--devices '0,x'", "GPU indices"]),
    ("E", ["--devices", "1,1"], ["names a GPU twice"]),
    ("E", ["--quantize", "gptq"], ["--quantize 'gptq'", "one of none, awq"]),
    ("E", ["--dtype", "float64"], ["--dtype 'float64'", "one of auto, bfloat16, float16, float32"]),
    ("D", ["--storage", "nonsense"], ["--storage 'nonsense'", "not a database URL"]),
    ("D", ["--storage", "postgresql://u:p@h:notaport/db"], ["not a database URL"]),
    ("D", ["--storage", "foo://x"], ["'foo'", "not support"]),
    ("D", ["--slo", "ttft_p95=fast"], ["malformed SLO 'ttft_p95=fast'"]),
    ("D", ["--bogus-flag"], ["unrecognized arguments: --bogus-flag", "see 'tune --help'"]),
    ("E", ["--devices", "0,1"], ["--devices 0,1", "--gpu cpu runs one trial at a time"]),
]


@pytest.mark.parametrize(("cls", "flags", "needles"), FLAG_CASES)
def test_tune_flags(cls, flags, needles, model, no_vllm, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = run(tune_main, ["--model", str(model), *BASE, "--vllm-python", str(no_vllm), *flags])
    one_line_error(code, capsys.readouterr().err, *needles)
    assert not (tmp_path / "results").exists()  # a run refused on input leaves no folder behind


def test_a_flag_and_the_file_accept_the_same_values(model, no_vllm, tmp_path, capsys, monkeypatch):
    """E: one rule per setting: --level-seconds -5 and level_seconds: -5 are refused alike."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slotune.yaml").write_text(f"model: {model}\ngpu: cpu\nslo: ttft_p95=2s\nlevel_seconds: -5\n")
    code = run(tune_main, ["--vllm-python", str(no_vllm)])
    one_line_error(code, capsys.readouterr().err, "slotune.yaml:4: key 'level_seconds' -5.0", "> 0 and ≤ 3,600")


def test_a_credential_in_storage_is_masked_in_the_error(model, no_vllm, tmp_path, capsys, monkeypatch):
    """A and D: an unreachable --storage is one line, its password masked."""
    monkeypatch.chdir(tmp_path)
    url = "postgresql+psycopg://user:s3cr3t@127.0.0.1:1/db"
    t0 = time.monotonic()
    code = run(tune_main, ["--model", str(model), *BASE, "--vllm-python", str(no_vllm), "--storage", url])
    err = capsys.readouterr().err
    one_line_error(code, err, "--storage postgresql+psycopg://user:***@127.0.0.1:1/db: cannot open it")
    assert "s3cr3t" not in err and time.monotonic() - t0 < 15


def test_out_naming_a_file(model, no_vllm, tmp_path, capsys, monkeypatch):
    """D: --out naming a file."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "a-file"
    target.write_text("x")
    code = run(tune_main, ["--model", str(model), *BASE, "--vllm-python", str(no_vllm), "--out", str(target)])
    one_line_error(code, capsys.readouterr().err, f"--out {target}: is a file")


def test_resume_without_a_study_says_so(model, no_vllm, tmp_path, capsys, monkeypatch):
    """C: --resume on a folder with no study used to start a new one silently."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "none-here"
    code = run(tune_main, ["--model", str(model), *BASE, "--vllm-python", str(no_vllm), "--resume", "--out", str(out)])
    one_line_error(code, capsys.readouterr().err, "--resume: there is no study in", "run without --resume")
    assert not out.exists()


def test_two_runs_on_one_out_at_once(model, no_vllm, tmp_path, capsys, monkeypatch):
    """D: the second of two tune runs on one --out is refused while the first works there."""
    from tuner.out_dir import claimed

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "shared"
    with claimed(out):
        code = run(tune_main, ["--model", str(model), *BASE, "--vllm-python", str(no_vllm), "--out", str(out)])
    one_line_error(code, capsys.readouterr().err, f"--out {out}: another tune (pid", "choose another --out")


@pytest.mark.parametrize(
    ("cls", "text", "needles"),
    [
        ("D", b"gpu: !!python/object/apply:os.system ['touch pwned']\n", ["slotune.yaml:1", "constructor"]),
        ("D", b"gpu: a30\nslo: \xff\xfe\n", ["slotune.yaml:2: not UTF-8 text (byte 0xff"]),
        ("G", b"gpu: a30\nslo: ttft_p95=2s\ngpu: h200\n", ["slotune.yaml:3", "key 'gpu' appears twice"]),
        ("G", b"trials: 3\nunknown_key: 1\n", ["slotune.yaml:2: unknown key 'unknown_key'"]),
        ("G", b"- a\n- b\n", ["must be a mapping"]),
        ("G", b"[" * 20000, ["nested deeper than 32 levels"]),
    ],
)
def test_project_file(cls, text, needles, no_vllm, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slotune.yaml").write_bytes(text)
    code = run(tune_main, ["--vllm-python", str(no_vllm)])
    one_line_error(code, capsys.readouterr().err, *needles)
    assert not list(tmp_path.glob("pwned*"))


def test_a_yaml_alias_bomb_is_refused_at_once_in_little_memory(no_vllm, tmp_path, capsys, monkeypatch):
    """G: the billion laughs took 40 s and ended in a MemoryError; aliases are refused before any expansion."""
    monkeypatch.chdir(tmp_path)
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (tmp_path / "slotune.yaml").write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    t0 = time.monotonic()
    code = run(tune_main, ["--vllm-python", str(no_vllm)])
    seconds, (_, peak) = time.monotonic() - t0, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    one_line_error(code, capsys.readouterr().err, "slotune.yaml:2", "alias *a0 is not allowed")
    assert seconds < 2 and peak < 20 << 20


@pytest.mark.parametrize(
    ("cls", "change", "needles"),
    [
        ("F", {"max_position_embeddings": -4096}, ["'max_position_embeddings' is -4096", "whole number ≥ 1"]),
        ("F", {"hidden_size": 0}, ["'hidden_size' is 0"]),
        ("F", {"hidden_size": 256.5}, ["'hidden_size' is 256.5"]),
        ("F", {"num_key_value_heads": 0}, ["'num_key_value_heads' is 0"]),
        ("F", {"num_key_value_heads": 64}, ["num_key_value_heads 64 exceeds num_attention_heads"]),
        ("F", {"num_hidden_layers": "two"}, ["'num_hidden_layers' is 'two'"]),
        ("F", {"vocab_size": 1e300}, ["'vocab_size' is 1e+300", "at most"]),
        ("F", {"quantization_config": [1]}, ["quantization_config must be a JSON object"]),
        ("F", {"text_config": {"hidden_size": -1}, "vision_config": {"hidden_size": 8}}, ["'text_config.hidden_size'"]),
    ],
)
def test_impossible_models_are_refused_not_feasible(cls, change, needles, model, capsys):
    code = run(tune_main, ["budget", "--model", str(with_config(model, change)), "--gpu", "cpu"])
    one_line_error(code, capsys.readouterr().err, *needles)


def test_config_json_that_is_a_list_or_not_utf8(model, capsys):
    """D: a config.json that is a JSON list, or not UTF-8."""
    (model / "config.json").write_text("[1, 2]")
    one_line_error(
        run(tune_main, ["budget", "--model", str(model), "--gpu", "cpu"]), capsys.readouterr().err, "got list"
    )
    (model / "config.json").write_bytes(b'{"model_type": "llama\xff"}')
    one_line_error(
        run(tune_main, ["budget", "--model", str(model), "--gpu", "cpu"]), capsys.readouterr().err, "not UTF-8"
    )


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--gpu-memory-utilization", "7"], ["--gpu-memory-utilization: '7': must be a fraction > 0 and ≤ 1"]),
        (["--gpu-memory-utilization", "nan"], ["'nan'"]),
        (["--max-model-len", "-1"], ["--max-model-len: '-1'"]),
        (["--max-num-seqs", "0"], ["--max-num-seqs: '0'"]),
    ],
)
def test_budget_flags(flags, needles, model, capsys):
    """E: the subcommands' numbers are checked by the same rules (argparse type=, one line)."""
    code = run(tune_main, ["budget", "--model", str(model), "--gpu", "cpu", *flags])
    one_line_error(code, capsys.readouterr().err, *needles)


def test_gpu_profile_file_with_impossible_numbers(model, tmp_path, capsys):
    """F/G: a GPU profile YAML with a negative memory size, or a duplicate key."""
    text = (Path(__file__).resolve().parents[1] / "profiles" / "gpus" / "a30.yaml").read_text()
    bad = tmp_path / "gpu.yaml"
    bad.write_text(text.replace("memory_bytes:", "memory_bytes: -1 #", 1))
    one_line_error(
        run(tune_main, ["budget", "--model", str(model), "--gpu", str(bad)]),
        capsys.readouterr().err,
        "'memory_bytes' is -1",
    )
    bad.write_text(text + "\nname: again\n")
    one_line_error(
        run(tune_main, ["budget", "--model", str(model), "--gpu", str(bad)]), capsys.readouterr().err, "appears twice"
    )


def test_tune_init_into_an_unwritable_place(model, tmp_path, capsys):
    """D: tune init into a folder that cannot be written (here: under a file) is one line."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = run(tune_main, ["init", "--model", str(model), "--gpu", "cpu", "--out", str(blocker / "slotune.yaml")])
    one_line_error(code, capsys.readouterr().err, "--out", "does not exist")
    code = run(
        tune_main, ["init", "--model", str(model), "--gpu", "cpu", "--slo", "x", "--out", str(tmp_path / "s.yaml")]
    )
    one_line_error(code, capsys.readouterr().err, "--slo 'x'")
    assert not (tmp_path / "s.yaml").exists()


def test_make_model_and_retune_inputs(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    one_line_error(run(tune_main, ["make-model", "--out", str(target)]), capsys.readouterr().err, "is a file")
    one_line_error(
        run(tune_main, ["retune", "--study", str(tmp_path), "--tolerance", "1.5"]), capsys.readouterr().err, "'1.5'"
    )
    one_line_error(
        run(tune_main, ["retune", "--study", str(tmp_path / "nope")]), capsys.readouterr().err, "no such folder"
    )
    (tmp_path / "best.json").write_text("{not json")
    one_line_error(run(tune_main, ["retune", "--study", str(tmp_path)]), capsys.readouterr().err, "not valid JSON")


URL = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--url", "http://[::1"], ["--url 'http://[::1' is not an http(s) URL"]),
        (["--url", "http://h:99999"], ["is not an http(s) URL"]),
        (["--url", URL, "--rate", "inf"], ["--rate must be a positive number"]),
        (["--url", URL, "--concurrency", "1000000000"], ["--concurrency must be ≥ 1 (at most 65536)"]),
        (["--url", URL, "--timeout", "nan"], ["--timeout must be > 0"]),
        (["--url", URL, "--rate", "1000", "--duration", "1e5"], ["--rate × --duration"]),
        (["--url", URL, "--bogus"], ["unrecognized arguments: --bogus"]),
    ],
)
def test_loadtest_inputs(args, needles, capsys):
    """D/E: loadtest's URL and numbers, one line before any request."""
    one_line_error(run(loadtest_main, ["--model", "m", *args]), capsys.readouterr().err, *needles)


@pytest.mark.parametrize("flag", ["--json", "--per-request"])
def test_loadtest_outputs_are_checked_before_the_run(flag, tmp_path, capsys):
    """I: an unwritable --json once failed after the whole run and its results were lost. Checked first: exit 2,
    where the unreachable server would have given 1."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = run(loadtest_main, ["--url", URL, "--model", "m", "--requests", "1", flag, str(blocker / "out.json")])
    one_line_error(code, capsys.readouterr().err, flag, "does not exist")


def test_workload_file_alias_duplicate_and_huge_lengths(tmp_path, capsys):
    """G: the workload YAML goes through the same strict reader; lengths have an upper bound."""
    wl = tmp_path / "w.yaml"
    for text, needle in (
        ("input_tokens: &x 5\noutput_tokens: *x\n", "alias *x is not allowed"),
        ("input_tokens: 5\ninput_tokens: 6\noutput_tokens: 4\n", "appears twice"),
        ("input_tokens: 100000000000\noutput_tokens: 4\n", "≤ 16777216"),
        ("input_tokens: {dist: normal, mean: .nan, std: 1, max: 9}\noutput_tokens: 4\n", "mean"),
        ("1: 2\n", "unknown field(s) 1"),
    ):
        wl.write_text(text)
        code = run(loadtest_main, ["--url", URL, "--model", "m", "--workload", str(wl)])
        one_line_error(code, capsys.readouterr().err, str(wl), needle)


def test_an_unexpected_exception_is_one_line_and_a_log(tmp_path, capsys, monkeypatch):
    """The top-level guard: a bug is one line naming a log with the traceback (credentials masked), exit 1."""
    from loadtest.crash import guarded

    monkeypatch.setenv("SLOTUNE_CACHE_DIR", str(tmp_path))

    def bug() -> int:
        raise RuntimeError("boom at postgresql://u:SECRET@h/db")

    code = guarded("tune", ["--storage", "postgresql://u:SECRET@h/db"], bug)
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "internal error: RuntimeError" in err and "SECRET" not in err
    (log,) = (tmp_path / "crash").glob("tune-crash-*.log")
    assert str(log) in err
    text = log.read_text()
    assert "Traceback" in text and "raise RuntimeError" in text and "SECRET" not in text and "u:***@h" in text
