from pathlib import Path

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.trial.context import TrialContext, launched_config


def ctx(actual=None):
    return TrialContext(
        spec=None,
        gpu=GPUProfile.load("a30"),
        slos=(),
        workload=None,
        plan=None,
        python="py",
        log_dir=Path("."),
        vllm_version="0.26.0",
        actual_gpu=actual,
    )


def test_emulation_rescales_gmu_and_pins_the_emulated_gpus_batch_defaults():
    h200 = GPUProfile.load("h200").memory_bytes
    a30 = GPUProfile.load("a30").memory_bytes
    cfg = launched_config(ServeConfig(model="/m"), ctx(GPUProfile.load("h200")))
    assert abs(cfg.gpu_memory_utilization * h200 - 0.92 * a30) < 0.0001 * h200
    assert (cfg.max_num_seqs, cfg.max_num_batched_tokens) == (256, 2048)  # vLLM's defaults on a 24 GB card
    tuned_cfg = ServeConfig(model="/m", gpu_memory_utilization=0.85, max_num_seqs=64)
    tuned = launched_config(tuned_cfg, ctx(GPUProfile.load("h200")))
    assert tuned.max_num_seqs == 64 and abs(tuned.gpu_memory_utilization * h200 - 0.85 * a30) < 0.0001 * h200


def test_no_emulation_changes_nothing():
    cfg = ServeConfig(model="/m", max_num_seqs=8)
    assert launched_config(cfg, ctx(None)) == cfg
