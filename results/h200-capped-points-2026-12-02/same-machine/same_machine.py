"""Offline, on the dev machine: calibrate on vLLM's defaults measured on the third machine (same-machine/defaults,
every level with vLLM's /metrics) and predict the capped pick measured right after on that machine
(same-machine/p0), and the four points measured on the second machine (../grid.jsonl)."""
import json, os, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("ROOT", HERE.parents[2]))  # variants: a checkout with ../experiments.patch applied
B = HERE.parents[1] / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(B)); sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402


def rows(path: Path) -> list[tuple[str, TrialResult, float]]:
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        pt = row["point"]
        label = "defaults" if not pt else f"{pt['max_num_seqs']} seqs, chunked={pt['enable_chunked_prefill']}"
        out.append((label, TrialResult.from_dict(row["result"]), row["capacity_req_s"]))
    return out


def main() -> None:
    model, _ = oc.model_for("h200")
    (defaults,) = rows(HERE / "defaults" / "grid.jsonl")
    t0 = time.monotonic()
    cal = model.calibrate([defaults[1]], None)
    variant = " ".join(f"{k}={os.environ[k]}" for k in ("PM_FORM", "PM_NO_SERVER", "PM_ITL_ONLY") if k in os.environ)
    print(f"variant: {variant or 'the landed model'} (in {ROOT}); calibrated on machine 3's defaults in "
          f"{time.monotonic() - t0:.0f} s: {cal.costs}")
    targets = [("machine 3: " + lbl, r, m) for lbl, r, m in [defaults] + rows(HERE / "p0" / "grid.jsonl")]
    targets += [("machine 2: " + lbl, r, m) for lbl, r, m in rows(HERE.parent / "grid.jsonl")]
    for label, r, measured in targets:
        (p,) = model.rank([r.config], cal)
        print(f"  {label:34} predicted {p.capacity_req_s:7.3f} measured {measured:7.3f} "
              f"({(p.capacity_req_s / measured - 1) * 100:+.1f} %)", flush=True)


if __name__ == "__main__":
    main()
