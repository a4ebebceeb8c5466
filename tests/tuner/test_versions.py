"""What `tune retune` takes for a changed serving stack (tuner.versions.changed_versions): the compared versions and
the device, and on a CPU its CPU count where the study recorded one."""

from __future__ import annotations

from tuner.versions import changed_versions

CPU = {"vllm": "0.32.0", "torch": "2.13.0+cpu", "gpu_name": "cpu: Intel(R) Xeon(R) Processor", "cpu_count": 2}


def test_another_cpu_count_on_a_cpu_is_another_machine() -> None:
    assert changed_versions(CPU, dict(CPU)) == {}
    assert changed_versions(CPU, {**CPU, "cpu_count": 8}) == {"cpu_count": (2, 8)}
    assert changed_versions(CPU, {**CPU, "gpu_name": "cpu: AMD EPYC"}) == {
        "gpu_name": ("cpu: Intel(R) Xeon(R) Processor", "cpu: AMD EPYC")
    }


def test_a_count_is_compared_only_where_recorded_and_only_on_a_cpu() -> None:
    old = {k: v for k, v in CPU.items() if k != "cpu_count"}  # a study from before the count was recorded
    assert changed_versions(old, CPU) == {}
    gpu = {"vllm": "0.26.0", "gpu_name": "NVIDIA H200", "cpu_count": 16}
    assert changed_versions(gpu, {**gpu, "cpu_count": 64}) == {}  # a GPU host's cores do not set its rate
    assert changed_versions(gpu, {**gpu, "vllm": "0.27.0"}) == {"vllm": ("0.26.0", "0.27.0")}
