#!/usr/bin/env bash
# ngram acceptance on SmolLM2 `edit`: spec/'s trial 1 (ngram k=3) on a fresh launch.sh server, 40 edit requests
# (64 output tokens) closed loop at concurrency 4, then two answers printed next to their passages.
set -u
cd /tmp/spec7/code
export HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 PYTHONPATH=/tmp/spec7/code
d=$(mktemp -d /tmp/accept-XXXX)
.venv/bin/python bench/trial_launch.py /work/dev/results/cpu-spec-smollm2-2026-12-07/spec 1 "$d" || exit 2
PORT=18161 setsid bash "$d/launch.sh" > "$d/server.log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "ready: http" "$d/server.log" && break; sleep 1; done
grep "ready:" "$d/server.log"
.venv/bin/loadtest --url http://127.0.0.1:18161 --model smollm2 --tokenizer /tmp/smollm2 --workload edit --concurrency 4 \
  --requests 40 --output-tokens 64 --seed 5 --json "$d/load.json" | tail -5
.venv/bin/python - "$d/load.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r.get("server") or {}
print({k: v for k, v in s.items() if "spec" in k})
PY
.venv/bin/python - <<'PY'
import json, urllib.request
from loadtest.workload import load_workload
from loadtest.prompts import PromptFactory, load_tokenizer
f = PromptFactory(load_workload("edit"), seed=5, tokenizer=load_tokenizer("/tmp/smollm2"), output_tokens=64)
for i in range(2):
    spec = f.make(i)
    for label, extra in (("default sampling", {}), ("temperature 0", {"temperature": 0})):
        body = {"model": "smollm2", "prompt": spec.prompt, "max_tokens": 64, "ignore_eos": True, **extra}
        req = urllib.request.Request("http://127.0.0.1:18161/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
        out = json.loads(urllib.request.urlopen(req, timeout=120).read())["choices"][0]["text"]
        print(f"--- request {i}, {label}\nPROMPT TAIL: {spec.prompt[-300:]!r}\nANSWER: {out!r}")
m = urllib.request.urlopen("http://127.0.0.1:18161/metrics").read().decode()
print("\n".join(l for l in m.splitlines() if l.startswith("vllm:spec_decode_num")))
PY
echo done
