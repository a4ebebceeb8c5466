"""On the H200 test machine: start vLLM (dummy weights) for a few shapes/settings and record the budget
lines it logs — the GPU calibration points of ``profiles/calibration/h200-vllm-0.26.yaml``.

    PYTHONPATH=/tmp/gpusite:$PWD python3 bench/budget_h200_calibrate.py OUT_DIR CASE [CASE ...]

CASE is ``shape:key=value,...`` (shape from tuner.synthetic.SHAPES, keys are vLLM flags without the
dashes, e.g. ``llama-3-8b:gpu-memory-utilization=0.9,max-model-len=8192``). Each server is stopped as
soon as it is healthy; its log and the parsed figures (JSON lines) go to OUT_DIR. Cases that would run
past ``--budget-s`` (default 500 s) are skipped and printed as such.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.budget.calibration_points import parse_log  # noqa: E402
from tuner.synthetic import write_model  # noqa: E402


def case_flags(flags: str) -> tuple[list[str], dict]:
    """A case's flags: vLLM arguments, and config.json overrides (cfg.KEY=JSON)."""
    args: list[str] = []
    overrides = {}
    for item in filter(None, flags.split(",")):
        key, _, value = item.partition("=")
        if key.startswith("cfg."):  # config.json override, e.g. cfg.max_position_embeddings=32768
            overrides[key[4:]] = json.loads(value)
        else:
            args += [f"--{key}", value] if value else [f"--{key}"]
    return args, overrides


def serve_until_healthy(cmd: list[str], log_path: Path, port: int, deadline: float) -> bool:
    """Start vLLM, wait until /health answers (or it exits, or the deadline), then stop it: did it come up?"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", VLLM_DO_NOT_TRACK="1")
    up = False
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while time.time() < deadline:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    up = r.status == 200
            except OSError:
                pass
            if up:
                break
            time.sleep(2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return up


def run_case(case: str, out: Path, port: int, deadline: float) -> dict:
    shape, _, flags = case.partition(":")
    args, overrides = case_flags(flags)
    model = write_model(Path("/tmp/calib-models") / shape, shape, weights=False, **overrides)
    log_path = out / f"{shape}-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--load-format",
        "dummy",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *args,
    ]
    t0 = time.time()
    up = serve_until_healthy(cmd, log_path, port, deadline)
    text = log_path.read_text(errors="replace")
    result = {
        "case": case,
        "started": up,
        "seconds": round(time.time() - t0, 1),
        "reported": parse_log(text),
        "config": json.loads((model / "config.json").read_text()),
        "args": args,
    }
    if not up:
        result["error"] = [ln for ln in text.splitlines() if "Error" in ln][-3:]
    return result


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    budget_s = float(os.environ.get("CALIB_BUDGET_S", "500"))
    start = time.time()
    with open(out / "points.jsonl", "a") as f:
        for i, case in enumerate(sys.argv[2:]):
            left = budget_s - (time.time() - start)
            if left < 100:
                print(json.dumps({"case": case, "skipped": "time budget"}), flush=True)
                continue
            result = run_case(case, out, 8100 + i, time.time() + left)
            f.write(json.dumps(result) + "\n")
            f.flush()
            print(json.dumps({k: result[k] for k in ("case", "started", "seconds", "reported")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
