from __future__ import annotations

import json
import sys

import pytest

from launch import vllm_info
from launch.errors import LaunchInputError
from launch.vllm_flags import VllmInfo, parse_help
from launch.vllm_info import probe_vllm


def test_parse_help_core_flags_in_every_release(any_info: VllmInfo) -> None:
    for flag in (
        "--model",
        "--max-model-len",
        "--gpu-memory-utilization",
        "--kv-cache-memory-bytes",
        "--speculative-config",
        "--enable-chunked-prefill",
        "--host",
        "--port",
        "-tp",
    ):
        assert any_info.has(flag), (any_info.version, flag)
    assert not any_info.has("--kv-cache-memory")  # 0.26's log hint is an abbreviation, not a flag
    assert len(any_info.flags) > 300


def test_boolean_negatives_drift_between_releases(make_info) -> None:
    assert make_info("0.26.0").negation_of("--enable-prefix-caching") == "--no-enable-prefix-caching"
    assert make_info("0.32.0").negation_of("--enable-prefix-caching") == "--no-enable-prefix-caching"
    assert make_info("0.33.0").negation_of("--enable-prefix-caching") == "--disable-prefix-caching"
    assert make_info("0.33.0").negation_of("--enable-chunked-prefill") == "--disable-chunked-prefill"
    assert make_info("0.33.0").negation_of("--enforce-eager") == "--no-enforce-eager"
    assert make_info("0.32.0").negation_of("--max-model-len") is None
    assert make_info("0.32.0").negation_of("-h") is None


def test_choices_in_both_formats(make_info) -> None:
    old = make_info("0.32.0").choices_of("--kv-cache-dtype")  # {a,b} (argparse)
    new = make_info("0.33.0").choices_of("--kv-cache-dtype")  # ['a', 'b'] (0.33)
    assert old is not None and new is not None
    assert "fp8" in old and "int8_per_token_head" in old and "octave_k3v3" not in old
    assert "fp8" in new and "octave_k3v3" in new
    dtypes = ("auto", "bfloat16", "float", "float16", "float32", "half")
    assert make_info("0.26.0").choices_of("--dtype") == dtypes


def test_parse_help_small_synthetic_text() -> None:
    text = (
        "  -h, --help            show this help message and exit\n"
        "  --flag-a, --no-flag-a\n"
        "  --size SIZE, -s SIZE  A size.\n"
        "                        --not-a-flag in a description\n"
        "  --mode {x,y}          A mode.\n"
    )
    flags, negations, choices = parse_help(text)
    assert flags == {"-h", "--help", "--flag-a", "--no-flag-a", "--size", "-s", "--mode"}
    assert dict(negations) == {"--flag-a": "--no-flag-a"}
    assert dict(choices) == {"--mode": ("x", "y")}


def test_round_trip(any_info: VllmInfo) -> None:
    assert VllmInfo.from_dict(json.loads(json.dumps(any_info.to_dict()))) == any_info


def test_interpreter_without_vllm_is_input_error(tmp_path) -> None:
    plain = tmp_path / "python-without-vllm"
    plain.write_text(f'#!/bin/sh\nexec {sys.base_prefix}/bin/python3 -S "$@"\n')
    plain.chmod(0o755)
    with pytest.raises(LaunchInputError, match="cannot import vllm") as e:
        probe_vllm(str(plain))
    assert str(plain) in str(e.value) and "--vllm-python" in str(e.value)


def test_missing_interpreter_is_input_error(tmp_path) -> None:
    with pytest.raises(LaunchInputError, match="does not exist"):
        probe_vllm(str(tmp_path / "nope" / "python"))


@pytest.mark.vllm
def test_probe_real_vllm_once_then_cache(vllm_python: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SLOTUNE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(vllm_info, "_MEMO", {})
    info = probe_vllm(vllm_python)
    assert info.python == vllm_python and info.platform in ("cpu", "cuda", "rocm", "xpu")
    assert info.has("--max-model-len") and info.negation_of("--enforce-eager")
    cached = list(tmp_path.glob("vllm-flags-*.json"))
    assert len(cached) == 1 and info.version in cached[0].name

    def must_not_run(*a, **k):
        raise AssertionError("--help=all ran again despite the cache")

    monkeypatch.setattr(vllm_info, "_full_probe", must_not_run)
    monkeypatch.setattr(vllm_info, "_MEMO", {})
    assert probe_vllm(vllm_python) == info


def test_a_hanging_interpreter_is_stopped_with_its_children(tmp_path) -> None:
    """A --vllm-python that never answers was a traceback, and the process it started kept running (#25)."""
    import time

    child_pid = tmp_path / "child.pid"
    hang = tmp_path / "hang"
    hang.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {child_pid}\nwait\n")
    hang.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(LaunchInputError, match=r"did not answer within 1 s .*--vllm-python"):
        vllm_info._quick_probe(str(hang), timeout=1)
    assert time.monotonic() - t0 < 10
    pid = int(child_pid.read_text())
    for _ in range(50):  # killed with its group (a zombie left for init to reap counts as gone)
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the interpreter's child {pid} still runs")
