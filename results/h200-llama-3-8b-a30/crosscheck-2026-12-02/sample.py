"""Sample vLLM's /metrics every 2 s (waiting, running, KV usage, preemptions) into a TSV; until killed."""
import re, sys, time, urllib.request
url, out = sys.argv[1], sys.argv[2]
keys = ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total")
t0 = time.time()
with open(out, "a") as f:
    f.write("t_s\t" + "\t".join(keys) + "\n")
    while True:
        try:
            text = urllib.request.urlopen(url + "/metrics", timeout=2).read().decode()
            vals = {}
            for line in text.splitlines():
                m = re.match(r"^(vllm:[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
                if m and m.group(1) in keys:
                    vals[m.group(1)] = vals.get(m.group(1), 0.0) + float(m.group(3))
            f.write("%.1f\t" % (time.time() - t0) + "\t".join("%g" % vals.get(k, float("nan")) for k in keys) + "\n")
            f.flush()
        except Exception as e:
            f.write("%.1f\terror %r\n" % (time.time() - t0, e)); f.flush()
        time.sleep(2)
