"""Every 0.25 s: the threads that used CPU since the last sample (comm, pid/tid, nice, cpu, ms)."""
import os, time, sys
HZ = os.sysconf("SC_CLK_TCK")
def snap():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f: st = f.read()
                comm = st[st.index("(")+1:st.rindex(")")]; rest = st[st.rindex(")")+2:].split()
                out[(pid, tid)] = (comm, int(rest[11]) + int(rest[12]), int(rest[16]), int(rest[36]))
        except (FileNotFoundError, ProcessLookupError, ValueError, IndexError, PermissionError): pass
    return out
prev = snap(); end = time.time() + float(sys.argv[1])
while time.time() < end:
    time.sleep(0.25); cur = snap(); t = time.strftime("%H:%M:%S") + f".{int(time.time()*1000)%1000:03d}"
    rows = []
    for k, (comm, ticks, nice, cpu) in cur.items():
        d = ticks - prev.get(k, (comm, ticks, nice, cpu))[1]
        if d > 0: rows.append((d * 1000 // HZ, comm, k[0], k[1], nice, cpu))
    rows.sort(reverse=True)
    print(t, " | ".join(f"{c}:{p}/{ti} n{n} c{cpu} {ms}ms" for ms, c, p, ti, n, cpu in rows[:7]), flush=True)
    prev = cur
