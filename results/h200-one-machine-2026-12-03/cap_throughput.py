"""From vLLM's own 2-s stats lines (each point's *.stats.txt): the engine's prompt and generation throughput while
its running count was high, split by whether requests waited at max_num_seqs (128-sequence points: running ≥ 124
with requests waiting) or for KV blocks (the others: KV ≥ 95 %, requests waiting), against the intervals where
nothing waited. Prints one line per point.

    python3 cap_throughput.py > cap-throughput.txt
"""
import glob
import re
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = re.compile(r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
                  r"Running: (\d+) reqs, Waiting: (\d+) reqs, GPU KV cache usage: ([\d.]+)%")
POINTS = {"k0-defaults": 256, "k4-defaults-again": 256, "k3-256-5120": 256, "k2-128-2048": 128, "k1-pick": 128}


def main() -> None:
    print("point: intervals (2 s) | nothing waiting, running >= 60: prompt + generation tokens/s | requests waiting "
          "(for a slot at 128 sequences, or for KV blocks): prompt + generation tokens/s, mean running")
    for name, seqs in POINTS.items():
        (path,) = glob.glob(str(HERE / name / "*.stats.txt"))
        rows = [tuple(map(float, m)) for m in LINE.findall(Path(path).read_text())]
        free = [(p, g) for p, g, r, w, kv in rows if r >= 60 and w == 0]
        if seqs == 128:
            held = [(p, g, r) for p, g, r, w, kv in rows if r >= seqs - 4 and w > 0]
        else:
            held = [(p, g, r) for p, g, r, w, kv in rows if kv >= 95 and w > 0]
        fp, fg = statistics.mean(p for p, _ in free), statistics.mean(g for _, g in free)
        hp, hg = statistics.mean(p for p, _, _ in held), statistics.mean(g for _, g, _ in held)
        print(f"{name:18} max_num_seqs {seqs}: {len(free):2d} free: {fp:6.0f} + {fg:5.0f} = {fp + fg:6.0f} | "
              f"{len(held):2d} waiting: {hp:6.0f} + {hg:5.0f} = {hp + hg:6.0f} tokens/s "
              f"({(hp + hg) / (fp + fg) * 100:3.0f} %), running {statistics.mean(r for _, _, r in held):5.1f}")


if __name__ == "__main__":
    main()
