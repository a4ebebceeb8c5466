"""Property: whatever flags, SLO strings, YAML documents or config.json shapes a user (or an attacker) gives,
the command line answers as docs/errors.md promises — exit 0 or 2 here (nothing is measured: 1 would be a
bug), bad input as one line without a traceback, never the crash guard's "internal error" — in bounded
time and memory. In-process, derandomized, a fixed example budget: a few seconds in CI.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtest.slo import SLOError, parse_slos
from tuner.cli import main as tune_main
from tuner.settings.fields import FIELDS

PROFILE = settings(
    max_examples=int(os.environ.get("SLOTUNE_PROPERTY_EXAMPLES", "40")),
    derandomize="SLOTUNE_PROPERTY_EXAMPLES" not in os.environ,  # CI: the same examples every run
    database=None,
    deadline=None,  # the bound is MAX_SECONDS below, checked on every example (a first call imports modules)
    suppress_health_check=[HealthCheck.too_slow],
)
MAX_SECONDS = 10.0  # one command answering bad input, ~0.05 s alone; the alias bomb took 40 s
MAX_PEAK = 64 << 20  # bytes allocated at once (an alias bomb used to reach a MemoryError)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tuner.synthetic import write_model

    root = tmp_path_factory.mktemp("props")
    write_model(root / "m", "llama-tiny", weights=False)
    no_vllm = root / "no-vllm"
    no_vllm.write_text("#!/bin/sh\nexit 1\n")
    no_vllm.chmod(0o755)
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):  # imports, once
        for args in (
            ["budget", "--model", str(root / "m"), "--gpu", "cpu"],
            ["--model", str(root / "m"), "--gpu", "cpu", "--slo", "x", "--storage", "sqlite:///s.db"],
            [
                "--model",
                str(root / "m"),
                "--gpu",
                "cpu",
                "--slo",
                "ttft_p95=2s",
                "--storage",
                "postgresql://127.0.0.1:1/d",
            ],
            ["--model", str(root / "m"), "--gpu", "cpu", "--slo", "ttft_p95=2s", "--vllm-python", str(no_vllm)],
        ):
            with tempfile.TemporaryDirectory(dir=root) as here, contextlib.chdir(here):
                tune_main(args)
    return root


def call(workdir: Path, args: list[str]) -> tuple[int, str]:
    """Run ``tune args`` in a fresh folder under ``workdir``; assert the documented answer; (exit, stderr)."""
    err, out = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory(dir=workdir) as here, contextlib.chdir(here):
        tracemalloc.start()
        t0 = time.monotonic()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                code = tune_main(args)
        except SystemExit as exc:  # argparse's own errors
            code = int(exc.code or 0)
        seconds, (_, peak) = time.monotonic() - t0, tracemalloc.get_traced_memory()
        tracemalloc.stop()
    text = err.getvalue()
    assert code in (0, 2), (args, code, text)
    assert "Traceback" not in text and "internal error" not in text, (args, text)
    if code == 2:
        assert len(text.strip().splitlines()) == 1, (args, text)
    assert seconds < MAX_SECONDS and peak < MAX_PEAK, (args, seconds, peak)
    return code, text


# ---- generated flags ---------------------------------------------------------------------------------
NUMBERS = st.sampled_from(["0", "-1", "-5", "1", "3", "2.5", "nan", "inf", "-inf", "1e308", "99999999999", "0x10"])
NAMES = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=12)
TEXTS = st.one_of(
    NUMBERS,
    NAMES,
    st.text(max_size=16),  # anything, NUL and newlines included
    st.sampled_from(["", " ", "ttft_p95=2s", "postgresql://u:pw@127.0.0.1:1/db", "sqlite:///s.db", "0,1", "awq"]),
)
SAFE_PATHS = NAMES.map(lambda n: "o-" + n)  # relative: every path the run may create stays in its folder


@st.composite
def flag_lists(draw: st.DrawFn) -> list[str]:
    names = draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=5, unique=True))
    args: list[str] = []
    for name in names:
        if name in ("out", "vllm_python"):
            continue
        flag = "--" + name.replace("_", "-")
        if FIELDS[name].type is bool:
            args.append(flag)
        else:
            args += [flag, draw(SAFE_PATHS if name in ("model", "quantized_model", "draft_model") else TEXTS)]
    if draw(st.booleans()):
        args.append("--resume")
    return args


@PROFILE
@given(flags=flag_lists())
def test_generated_flags(workdir: Path, flags: list[str]) -> None:
    base = ["--model", str(workdir / "m"), "--gpu", "cpu", "--slo", "ttft_p95=2s"]
    args = [*base, *flags, "--out", "o", "--vllm-python", str(workdir / "no-vllm")]
    code, _ = call(workdir, args)
    assert code == 2  # bad input, or no vLLM in the interpreter: nothing starts


# ---- SLO strings ---------------------------------------------------------------------------------------
SLO_PART = st.builds(
    "{}_p{}={}{}".format,
    st.sampled_from(["ttft", "tpot", "itl", "e2e", "foo", ""]),
    st.sampled_from(["50", "95", "99.9", "100", "9", "p", ""]),
    st.sampled_from(["2", "0", "0.5", "-1", "1e3", "x", ""]),
    st.sampled_from(["s", "ms", "m", ""]),
)
SLOS = st.one_of(st.lists(SLO_PART, min_size=1, max_size=3).map(",".join), st.text(max_size=30))


@PROFILE
@given(slo=SLOS)
def test_generated_slo_strings(workdir: Path, slo: str) -> None:
    code, _ = call(workdir, ["init", "--model", str(workdir / "m"), "--gpu", "cpu", "--slo", slo])
    try:
        valid = bool(parse_slos(slo))
    except SLOError:
        valid = False
    assert code == (0 if valid else 2), slo  # init writes exactly what parses, and refuses the rest


# ---- YAML documents ------------------------------------------------------------------------------------
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3))
KEYS = st.one_of(st.sampled_from(sorted(FIELDS)), NAMES)
HOSTILE_YAML = st.sampled_from(
    [
        "a: &x [1, 2]\nb: *x\n",
        "gpu: a30\ngpu: h200\n",
        "gpu: !!python/object/apply:os.system ['true']\n",
        "trials: !!binary aGk=\n",
        "[" * 5000,
        "? [a, b]\n: 1\n",
        "slo: ttft_p95=2s\n---\nslo: x\n",
        "%YAML 9.9\n---\na: 1\n",
        "\t- a\n",
    ]
)


@st.composite
def yaml_documents(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mapping", "hostile", "any"]))
    if kind == "hostile":
        text = draw(HOSTILE_YAML)
    elif kind == "any":
        text = yaml.safe_dump(draw(VALUES))
    else:
        text = yaml.safe_dump(draw(st.dictionaries(KEYS, VALUES, max_size=6)), default_flow_style=False)
    data = text.encode()
    if draw(st.booleans()) and kind == "mapping":
        data += draw(st.sampled_from([b"x: \xff\n", b"y: \xc3\x28\n", b"\x00\n"]))
    return data


@PROFILE
@given(doc=yaml_documents())
def test_generated_project_files(workdir: Path, doc: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=workdir, suffix=".yaml", delete=False) as f:
        f.write(doc)
    try:
        call(workdir, ["--config", f.name, "--out", "o", "--vllm-python", str(workdir / "no-vllm")])
        call(workdir, ["budget", "--model", str(workdir / "m"), "--gpu", f.name])  # as a GPU profile
        call(workdir, ["init", "--model", str(workdir / "m"), "--gpu", "cpu", "--workload", f.name])  # a workload
    finally:
        os.unlink(f.name)


# ---- config.json shapes --------------------------------------------------------------------------------
CONFIG_KEYS = st.sampled_from(
    [
        "model_type",
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "torch_dtype",
        "sliding_window",
        "layer_types",
        "tie_word_embeddings",
        "quantization_config",
        "text_config",
        "vision_config",
        "num_experts",
    ]
)


@st.composite
def config_documents(draw: st.DrawFn, base: dict) -> str:
    if draw(st.integers(0, 9)) == 0:
        return json.dumps(draw(VALUES))  # not an object at all
    cfg = dict(base)
    for key, value in draw(st.dictionaries(CONFIG_KEYS, VALUES, max_size=4)).items():
        cfg[key] = value
    for key in draw(st.lists(CONFIG_KEYS, max_size=2)):
        cfg.pop(key, None)
    return json.dumps(cfg)


@PROFILE
@given(data=st.data())
def test_generated_config_json(workdir: Path, data: st.DataObject) -> None:
    base = json.loads((workdir / "m" / "config.json").read_text())
    text = data.draw(config_documents(base))
    with tempfile.TemporaryDirectory(dir=workdir) as model:
        (Path(model) / "config.json").write_text(text)
        code, _ = call(workdir, ["budget", "--model", model, "--gpu", "cpu", "--json"])
    assert code in (0, 2)
