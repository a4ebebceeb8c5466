"""Append a GPU study's measured memory lines to the budget's calibration (profiles/calibration/*.yaml).

    python scripts/gpu/calibration-from-study.py STUDY_DIR --shape llama-3-8b --trials 0,1,2 \
        [--skip-blocks N] [--note TEXT] [--calibration profiles/calibration/h200-vllm-0.26.yaml] [--dry-run]

STUDY_DIR holds trials.csv and memory-lines.txt (scripts/gpu/h200-study.sh writes both). The memory
lines of one vLLM engine (one ``EngineCore pid``) form a block; blocks are taken in log order, the
first ``--skip-blocks`` of them left out (already added), and paired one to one with ``--trials`` (a ``-``
there leaves its block out: a trial cut short, not in trials.csv). A trial that served the config-only
4-bit variant (its ``model`` ends in ``-w4a16``: make-model --w4a16) gets that variant's
``quantization_config`` in its shape.
A block without "Available KV cache memory" (a server that did not start) is an error, not skipped.
Settings come from the trial's row; gpu_memory_utilization is the one vLLM states it was launched
with ("Desired GPU memory utilization is (X, …)"), which differs from the row where memory was
emulated. The prediction error of every appended point is printed.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from budget_calibration_io import SHAPE_KEYS  # noqa: E402

from tuner.budget.calibration_points import parse_log  # noqa: E402
from tuner.synthetic import shape_config, w4a16_quantization_config  # noqa: E402

SETTING_COLUMNS = (
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "kv_cache_dtype",
    "block_size",
    "speculative_method",
    "num_speculative_tokens",
)


class _NoAliases(yaml.SafeDumper):
    """Every point spelled out: anchors would clash with the ones already in the file."""

    def ignore_aliases(self, data) -> bool:
        return True


def engine_blocks(text: str) -> list[str]:
    """The lines of each engine process, in the order the engines first appear."""
    blocks: dict[tuple[int, str], list[str]] = {}
    section = 0  # pids repeat across machines: a "###" header (one per device call) starts a new section
    for line in text.splitlines():
        if line.startswith("###"):
            section += 1
        m = re.match(r"\(EngineCore[^ ]* pid=(\d+)\)", line)
        if m:
            blocks.setdefault((section, m.group(1)), []).append(line)
    return ["\n".join(lines) for lines in blocks.values()]


def _value(column: str, raw: str):
    if raw in ("", "None"):
        return None
    if raw in ("True", "False"):
        return raw == "True"
    if column in ("kv_cache_dtype", "speculative_method"):
        return raw
    return int(float(raw))


def point_for(block: str, row: dict[str, str], shape: dict, source: str) -> dict:
    reported = parse_log(block)
    if "available_kv_gib" not in reported or "kv_tokens" not in reported:
        raise SystemExit(f"trial {row['number']}: its memory lines hold no KV cache figures (did it start?)")
    launched = re.search(r"Desired GPU memory utilization is \(([\d.]+),", block)
    if not launched:
        raise SystemExit(f"trial {row['number']}: no 'Desired GPU memory utilization' line in its block")
    settings: dict = {"gpu_memory_utilization": round(float(launched.group(1)), 4)}
    for col in SETTING_COLUMNS:
        value = _value(col, row.get(col, ""))
        if value is not None:
            settings[col] = value
    return {"source": source, "shape": shape, "settings": settings, "reported": {**reported, "started": True}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study_dir", type=Path)
    ap.add_argument("--shape", required=True, help="tuner.synthetic shape the study served")
    ap.add_argument("--trials", required=True, help="trial numbers, comma-separated, in log order")
    ap.add_argument("--skip-blocks", type=int, default=0)
    ap.add_argument("--note", default="", help="appended to each point's source")
    ap.add_argument("--calibration", type=Path, default=ROOT / "profiles/calibration/h200-vllm-0.26.yaml")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    rows = {r["number"]: r for r in csv.DictReader((a.study_dir / "trials.csv").open())}
    blocks = engine_blocks((a.study_dir / "memory-lines.txt").read_text())[a.skip_blocks :]
    numbers = [n.strip() for n in a.trials.split(",") if n.strip()]
    if len(blocks) != len(numbers):
        raise SystemExit(
            f"{len(blocks)} engine blocks after --skip-blocks {a.skip_blocks} but "
            f"{len(numbers)} trials given ({a.trials}); pair them one to one"
        )
    full = shape_config(a.shape)
    shape = {k: full[k] for k in SHAPE_KEYS if full.get(k) is not None}
    points = []
    for n, block in zip(numbers, blocks, strict=True):
        if n == "-":
            continue
        if n not in rows:
            raise SystemExit(f"trial {n} is not in {a.study_dir / 'trials.csv'}")
        source = f"H200 tune study {a.study_dir.as_posix()}, trial {n}" + (f" ({a.note})" if a.note else "")
        four_bit = rows[n].get("model", "").endswith("-w4a16")
        p = point_for(
            block,
            rows[n],
            {**shape, "quantization_config": w4a16_quantization_config(shape)} if four_bit else shape,
            source,
        )
        predicted = rows[n].get("kv_tokens_predicted")
        err = (float(predicted) / p["reported"]["kv_tokens"] - 1) * 100 if predicted else float("nan")
        print(
            f"trial {n}: settings {p['settings']} kv reported {p['reported']['kv_tokens']:.0f} "
            f"predicted {predicted or '-'} ({err:+.2f} %)"
        )
        points.append(p)
    if not a.dry_run:
        text = a.calibration.read_text()
        before = len(yaml.safe_load(text).get("points") or [])
        # appended as text (the file's comments stay where they are); `points:` is the file's last key
        text = text.rstrip("\n") + "\n" + yaml.dump(points, Dumper=_NoAliases, sort_keys=False, width=110)
        if len(yaml.safe_load(text).get("points") or []) != before + len(points):
            raise SystemExit(f"{a.calibration}: `points:` is not its last key; append the points by hand")
        a.calibration.write_text(text)
        print(f"appended {len(points)} point(s) to {a.calibration}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
