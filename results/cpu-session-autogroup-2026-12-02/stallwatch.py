"""Sleep 50 ms at a time; when a wake comes late (> 200 ms), print how the CPUs' time went meanwhile."""
import time, sys
def stat():
    with open("/proc/stat") as f: return [int(x) for x in f.readline().split()[1:9]]
names = "user nice system idle iowait irq softirq steal".split()
end = time.time() + float(sys.argv[1]); prev_t, prev = time.monotonic(), stat(); late = 0
while time.time() < end:
    time.sleep(0.05)
    t, cur = time.monotonic(), stat()
    if t - prev_t > 0.2:
        late += 1
        d = [b - a for a, b in zip(prev, cur)]
        print(time.strftime("%H:%M:%S"), f"woke {1000*(t-prev_t):.0f} ms late-ish:", {n: v for n, v in zip(names, d) if v}, flush=True)
    prev_t, prev = t, cur
print("late wakes:", late, flush=True)
