"""``FIELDS``: the single description of every ``tune`` setting — its type, unit/valid values (a
``tuner.settings.rules.Rule``) and help — and ``check_setting``, through which the CLI flags, the project file
(tuner.settings.project) and ``tune init`` check values, so a flag and the file accept exactly the same values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadtest.redact import mask
from tuner.errors import ProfileError, UsageError
from tuner.search.tries import syntax_problem
from tuner.settings import rules
from tuner.settings.rules import Rule


@dataclass(frozen=True)
class Field:
    type: type
    help: str
    default: Any = None
    rule: Rule = rules.TEXT

    @property
    def valid(self) -> str:
        return self.rule.valid


FIELDS: dict[str, Field] = {
    "model": Field(str, "model directory (config.json + weights), e.g. ./my-7b", rule=rules.PATH),
    "quantized_model": Field(str, "an existing quantized variant of the model; searched as a knob", rule=rules.PATH),
    "draft_model": Field(str, "draft model directory for speculative decoding (same tokenizer)", rule=rules.PATH),
    "quantize": Field(
        str, "quantize first: 'awq' (4-bit AWQ with a quality gate) or 'none'", "none", rules.choice("none", "awq")
    ),
    "quantize_python": Field(str, "interpreter with llm-compressor (default: .venv-quant/bin/python)", rule=rules.PATH),
    "quantize_samples": Field(
        int, "calibration sequences for --quantize awq (as `tune quantize --samples`)", 128, rules.whole(1, 100_000)
    ),
    "gpu": Field(
        str,
        "GPU profile: a10, a30, l4, l40s, a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, "
        "rtx4090, cpu, auto, or a YAML file",
    ),
    "emulate_on": Field(
        str, "GPU profile of the device really used when --gpu names a smaller one (memory is emulated, speed is not)"
    ),
    "gpu_price": Field(
        float,
        "US$ per GPU-hour for the cost per token (default: the GPU profile's hourly_price_usd, if any)",
        rule=rules.Rule("a number of US dollars per GPU-hour ≥ 0", "2.5", low=0, high=1e6),
    ),
    "slo": Field(
        str, "SLOs, e.g. ttft_p95=2s,tpot_p99=80ms (metrics ttft/tpot/itl/e2e, p50..p99.9, s|ms)", rule=rules.SLO_TEXT
    ),
    "workload": Field(str, "built-in workload (chat, code, summarize, longdoc) or a YAML/JSONL file", "chat"),
    "trials": Field(
        int,
        "total trials in the study (a resumed study runs only the missing ones)",
        20,
        rules.whole(1, 100_000, example=20),
    ),
    "out": Field(str, "output folder (default results/<model>-<gpu>-<workload>)", rule=rules.PATH),
    "vllm_python": Field(str, "interpreter whose vLLM is launched (default: the current one)", rule=rules.PATH),
    "docker_image": Field(str, "launch vLLM in this Docker image instead of an interpreter"),
    "storage": Field(
        str,
        "Optuna storage URL, e.g. postgresql+psycopg://user@host/db, the password in PGPASSWORD or ~/.pgpass "
        "(default: sqlite in --out)",
        rule=rules.STORAGE,
    ),
    "devices": Field(
        str, "GPU indices for one trial each at a time, e.g. 0,1,2,3 (default: one trial at a time)", rule=rules.DEVICES
    ),
    "load_format": Field(str, "vLLM --load-format, e.g. 'dummy' for random weights generated on the device"),
    "dtype": Field(
        str,
        "vLLM --dtype for every launch, e.g. 'float32' on a CPU without AVX-512 (where vLLM's 'auto' serves a bfloat16 "
        "model in bfloat16, which such a CPU computes an order of magnitude slower) (default: vLLM's 'auto')",
        rule=rules.choice("auto", "bfloat16", "float16", "float32"),
    ),
    "seed": Field(int, "seed for the sampler and the load generator", 0, rules.SEED),
    "level_seconds": Field(
        float,
        "seconds of load per measured rate level (default by profile: cpu 6, GPU 20)",
        rule=rules.seconds(3600, "8"),
    ),
    "soak_seconds": Field(
        float,
        "seconds the winner (and vLLM's defaults) are held at their stated rate on a fresh server to certify "
        "it (default by profile: cpu 120, GPU 180; 0: no certification, the rates stay the search's estimates)",
        rule=rules.Rule("a number of seconds ≥ 0 and ≤ 86,400 (0: no certification)", "180", low=0, high=86_400),
    ),
    "certify": Field(
        str,
        "whom the certifying soaks hold to their stated rate: 'all' (the best and vLLM's defaults, for a "
        "like-for-like gain, and a configuration never soaked whose search estimate beats the best's certified rate "
        "by over 5 %), 'best', 'baseline' (e.g. one per call where a machine is lent briefly), or 'each' "
        "(every configuration that met the SLO; the highest certified rate wins)",
        "all",
        rules.choice("all", "best", "baseline", "each"),
    ),
    "output_tokens": Field(
        int,
        "fix every request's output length (max_tokens + ignore_eos)",
        rule=rules.whole(1, 1 << 20, " of tokens", example=128),
    ),
    "startup_timeout": Field(
        float, "seconds to wait for a vLLM server to become healthy", 900.0, rules.seconds(86_400, "900")
    ),
    "time_budget": Field(
        float,
        "seconds for this run: no new trial starts when a typical (median) trial would "
        "overrun it, and a started trial whose measurement would is given up (the study "
        "stays resumable)",
        rule=rules.seconds(31 * 86_400, "3600"),
    ),
    "confirm": Field(
        int,
        "after the search, measure the best config and its rival (vLLM's defaults, else the "
        "runner-up) N more times each with fresh servers; report the gain on the means",
        0,
        rules.whole(0, 1000, " of rounds", example=2),
    ),
    "overlap_startup": Field(
        bool,
        "start the next trial's server while the current one is measured (only one "
        "is measured at a time; needs memory for two servers, e.g. an emulated GPU)",
        False,
        rules.FLAG,
    ),
    "same_server": Field(
        bool,
        "measure all of a trial's load levels on one server (faster on the CPU); by default a CPU level that "
        "follows a lost one runs on a fresh server, since a lost level left vLLM-CPU slower (docs/certification.md)",
        False,
        rules.FLAG,
    ),
    "predict": Field(
        bool,
        "rank a sample of the search space with perfmodel, calibrated on vLLM's defaults and refitted after "
        "each launch, and launch only the best predicted (--trials caps the launches); see docs/perfmodel.md",
        False,
        rules.FLAG,
    ),
    "try_first": Field(
        str,
        "configurations to measure right after vLLM's defaults, before the sampler's own: KNOB=VALUE pairs, "
        "several configurations separated by ';' (knobs not named are the sampler's: name them all for one exact "
        "point), e.g. "
        "speculative_method=ngram,num_speculative_tokens=3",
        rule=rules.Rule(
            "KNOB=VALUE pairs separated by ',' (configurations by ';')",
            "speculative_method=ngram,num_speculative_tokens=3",
            syntax_problem,
        ),
    ),
    "predict_sample": Field(
        int,
        "with --predict: configurations sampled from the search space and ranked",
        200,
        rules.whole(1, 10_000, " of configurations", example=200),
    ),
}


def _of_type(f: Field, value: Any, text: bool) -> Any:
    """``value`` as the field's type; a flag's text is converted, a file's value must already be it."""
    if text and isinstance(value, str) and f.type in (int, float):
        try:
            return f.type(value.strip())
        except ValueError:
            return value
    if f.type is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def check_setting(name: str, value: Any, where: str | None = None) -> Any:
    """``value`` checked against FIELDS[name]: a flag's text (``where`` None), or a value read from a file
    (``where``: "slotune.yaml:4"). Returns it as the field's type; else a UsageError (ProfileError for a
    file) naming the value, what is valid and a fix."""
    f = FIELDS[name]
    given = value
    value = _of_type(f, value, text=where is None)
    wrong_type = not isinstance(value, f.type) or (isinstance(value, bool) and f.type is not bool)
    problem = f"must be {f.valid}" if wrong_type else f.rule.problem(value)
    if problem is None:
        return value
    flag = "--" + name.replace("_", "-")
    if where is None:
        fix = "" if "e.g." in problem else f"; e.g. {flag} {f.rule.example}"
        raise UsageError(f"{flag} {mask(str(given))!r}: {problem}{fix}")
    fix = "" if "e.g." in problem else f"; e.g. {name}: {f.rule.example}"
    raise ProfileError(f"{where}: key '{name}' {mask(repr(value))}: {problem}{fix}")
