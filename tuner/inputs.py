"""Load and validate everything a tune run needs before anything is started.

Bad input raises a UsageError-family exception naming the value and the valid choices (exit 2).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from launch.vllm_flags import VllmInfo
from launch.vllm_info import probe_vllm
from loadtest.slo import SLO, parse_slos
from loadtest.workload import Workload, load_workload
from tuner.budget.gpu import GPUProfile
from tuner.certify.certified import WHOM
from tuner.errors import UsageError
from tuner.model.spec import ModelSpec
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.capacity import MeasurePlan

CPU_KV_SPACE_DEFAULT_GIB = "2"


@dataclass(frozen=True)
class Inputs:
    settings: TuneSettings
    slos: tuple[SLO, ...]
    gpu: GPUProfile
    actual_gpu: GPUProfile | None  # the device really used when memory is emulated
    workload: Workload
    spec: ModelSpec
    model_dir: Path
    vllm: VllmInfo
    out: Path
    cpu_kv_space_gib: str | None  # VLLM_CPU_KVCACHE_SPACE for the cpu profile
    notes: tuple[str, ...]


def check_model_dir(path: str, what: str = "--model") -> Path:
    p = Path(path).expanduser()
    if not p.is_dir():
        raise UsageError(f"{what} {path}: no such directory (expected a model folder with config.json)")
    if not (p / "config.json").is_file():
        raise UsageError(f"{what} {path}: no config.json in that folder; point {what} at a Hugging Face model folder")
    return p.resolve()


def measure_plan(settings: TuneSettings, gpu: GPUProfile) -> MeasurePlan:
    """Short levels on the CPU (demo/CI), longer and wider on a GPU; --level-seconds and --soak-seconds
    override. Every rate level lasts at least its seconds and ten mean request lifetimes (steady state)."""
    if gpu.is_cpu:
        plan = MeasurePlan(
            warmup_requests=2,
            probe_requests=24,
            probe_concurrency=8,
            level_duration_s=6.0,
            min_level_requests=12,
            bisection_steps=2,
            seed=settings.seed,
            level_max_s=60.0,
            # past the cap a level may run to 180 s: SmolLM2's `edit` requests live 30-36 s near capacity, and
            # five of them did not fit 120 s (docs/certification.md, "Levels past their cap")
            level_stretch=3.0,
            # a lost level left SmolLM2 servers 1.2-3.7 x slower at p95 TTFT under the same load (and 120 s idle
            # did not restore it): the next level starts a fresh server (~25 s; docs/certification.md)
            fresh_server_after_lost=True,
            soak_s=120.0,
        )
    else:
        plan = MeasurePlan(
            warmup_requests=8,
            probe_requests=256,
            probe_concurrency=128,
            level_duration_s=20.0,
            min_level_requests=64,
            bisection_steps=3,
            seed=settings.seed,
            level_max_s=180.0,
            soak_s=180.0,
        )
    if settings.level_seconds:
        plan = replace(plan, level_duration_s=settings.level_seconds)
    if settings.same_server:
        plan = replace(plan, fresh_server_after_lost=False)
    if settings.certify not in WHOM:
        raise UsageError(f"--certify {settings.certify!r}: use one of {', '.join(WHOM)}")
    if settings.soak_seconds is not None:
        if not (math.isfinite(settings.soak_seconds) and settings.soak_seconds >= 0):
            raise UsageError(
                f"--soak-seconds {settings.soak_seconds}: give seconds >= 0 (e.g. 180; 0 turns certification off)"
            )
        plan = replace(plan, soak_s=settings.soak_seconds)
    return plan


def short_soak_note(settings: TuneSettings, gpu: GPUProfile) -> list[str]:
    """A note when --soak-seconds certifies shorter windows than the profile's default soak (0, no soak, is its
    own choice): a queue that builds later is past what such soaks reach (docs/certification.md)."""
    asked = settings.soak_seconds
    default = measure_plan(replace(settings, soak_seconds=None), gpu).soak_s
    if asked is None or asked == 0 or asked >= default:
        return []
    return [
        f"--soak-seconds {asked:g} is under the {gpu.name} profile's {default:g}: the certified rates held "
        f"{asked:g}-s windows; a queue that builds later (on the CPU, TTFT growing in a 2-minute window's second "
        f"minute) is past what they see. Leave --soak-seconds out for {default:g}-s soaks."
    ]


def _check_predict(settings: TuneSettings, slos: Sequence[SLO]) -> None:
    """Before any work: --predict launches one trial at a time and predicts TTFT, TPOT and E2E SLOs only."""
    if not settings.predict:
        return
    if len(settings.device_list()) > 1 or settings.overlap_startup:
        raise UsageError(
            "--predict launches one trial at a time (each refits the model for the next): leave out "
            "--devices with several GPUs and --overlap-startup, or --predict"
        )
    itl = [str(s) for s in slos if s.metric not in ("ttft", "tpot", "e2e")]
    if itl:
        raise UsageError(
            f"--predict: the performance model does not predict {', '.join(itl)}; state it as a tpot SLO, or "
            "leave --predict out to measure it"
        )


def load_inputs(settings: TuneSettings, vllm: VllmInfo | None = None) -> Inputs:
    """Check and load everything a run needs. ``vllm``: the launched vLLM's flags when known without probing
    its interpreter (re-writing the outputs of a study measured on another machine); default: probed."""
    model_dir = check_model_dir(settings.model)
    for extra, flag in ((settings.quantized_model, "--quantized-model"), (settings.draft_model, "--draft-model")):
        if extra:
            check_model_dir(extra, flag)
    slos = parse_slos(settings.slo)
    _check_predict(settings, slos)
    gpu = GPUProfile.load(settings.gpu)
    actual = GPUProfile.load(settings.emulate_on) if settings.emulate_on else None  # "auto": the local GPU
    notes = _placement_notes(settings, gpu, actual)
    notes += short_soak_note(settings, gpu)
    workload = load_workload(settings.workload)
    spec = ModelSpec.from_dir(model_dir)
    longest = workload.max_input_tokens + (settings.output_tokens or workload.max_output_tokens)
    if longest > spec.max_position_embeddings:
        raise UsageError(
            f"workload {workload.name!r} needs up to {longest} tokens per request"
            + (f" with --output-tokens {settings.output_tokens}" if settings.output_tokens else "")
            + f" but the model allows {spec.max_position_embeddings} (max_position_embeddings); choose a shorter "
            "workload or --output-tokens"
        )
    if settings.docker_image:
        raise UsageError(
            f"docker_image {settings.docker_image!r}: tune cannot launch trials in Docker yet (the "
            "backend exists in launch.docker_backend, but tune would need the image's flags without "
            "an engine to ask); use --vllm-python with an interpreter that has vLLM"
        )
    info = vllm or probe_vllm(settings.vllm_python)
    _check_vllm_fits(settings, info, actual or gpu)
    kv_space = None
    if gpu.is_cpu:
        kv_space = os.environ.get("VLLM_CPU_KVCACHE_SPACE") or CPU_KV_SPACE_DEFAULT_GIB
        if "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            notes.append(f"VLLM_CPU_KVCACHE_SPACE not set: using {kv_space} GiB of KV cache on the CPU.")
    return Inputs(
        settings, slos, gpu, actual, workload, spec, model_dir, info, settings.out_dir(), kv_space, tuple(notes)
    )


def _placement_notes(settings: TuneSettings, gpu: GPUProfile, actual: GPUProfile | None) -> list[str]:
    """Checks of --emulate-on, --overlap-startup and --devices against the GPU profile; the notes they leave."""
    notes: list[str] = []
    if actual is not None:
        if actual.memory_bytes < gpu.memory_bytes:
            raise UsageError(
                f"--emulate-on {settings.emulate_on}: that device has less memory than --gpu "
                f"{settings.gpu}; memory can only be emulated on a larger device"
            )
        notes.append(
            f"Memory of {gpu.name} emulated on {actual.name} (gpu_memory_utilization rescaled): "
            "memory limits match the target GPU, speed does not."
        )
    if settings.overlap_startup:
        room = actual.memory_bytes if actual is not None else 0
        if gpu.is_cpu or actual is None or 2 * gpu.memory_bytes > 0.9 * room:
            raise UsageError(
                "--overlap-startup needs memory for two servers on one device: use it when --gpu is "
                "emulated (--emulate-on) on a device with over twice its memory, never on the cpu"
            )
        notes.append(
            "Startups overlapped: the next trial's server started while the current one was measured "
            "(one server measured per device at a time). vLLM's defaults ran alone; a trial measured "
            "while other servers started or waited may read lower than on a fresh server (the "
            "defaults did, by a third, on the H200): --confirm re-measures the best without that."
        )
    if gpu.is_cpu and settings.devices:
        raise UsageError(
            f"--devices {settings.devices}: --gpu {settings.gpu} runs one trial at a time on the CPU (there are "
            "no GPU indices to pin); leave --devices out, or pass a GPU profile on a GPU machine"
        )
    return notes


def _check_vllm_fits(settings: TuneSettings, info: VllmInfo, device: GPUProfile) -> None:
    """The installed vLLM accepts --load-format and is the build (CPU or GPU) the profile needs."""
    formats = info.choices_of("--load-format")
    if settings.load_format and formats and settings.load_format not in formats:
        raise UsageError(
            f"--load-format {settings.load_format!r}: vLLM {info.version} accepts {', '.join(formats)}; "
            "e.g. --load-format dummy for random weights"
        )
    if device.is_cpu != (info.platform == "cpu"):
        build = "the CPU build" if info.platform == "cpu" else f"a {info.platform} build"
        fix = (
            "pass --gpu cpu, or --vllm-python with a CUDA build of vLLM on a GPU machine"
            if info.platform == "cpu"
            else "pass the GPU's profile (or --gpu auto) instead of cpu"
        )
        raise UsageError(
            f"--gpu {settings.gpu} does not match the vLLM in {settings.vllm_python}: it is {build} "
            f"of vLLM {info.version}; {fix}"
        )


def with_cpu_dtype_note(inputs: Inputs, timer: Callable[[str], float | None] | None = None) -> Inputs:
    """On the CPU, where vLLM will serve this model in bfloat16 and this CPU computes bfloat16 far slower than
    float32 (``launch.cpu_dtype``: timed in the vLLM interpreter), a note that suggests --dtype float32."""
    from launch.cpu_dtype import bf16_slowdown, slow_bf16_note

    if not inputs.gpu.is_cpu or inputs.spec.with_dtype(inputs.settings.dtype).dtype != "bfloat16":
        return inputs
    note = slow_bf16_note((timer or bf16_slowdown)(inputs.settings.vllm_python))
    return replace(inputs, notes=(*inputs.notes, note)) if note else inputs
