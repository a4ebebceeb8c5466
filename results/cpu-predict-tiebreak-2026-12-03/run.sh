#!/bin/bash
# G2 on the CPU with the tie-break (tuner/search/departures.py), head to head in one sitting, as
# ../cpu-predict-vs-grid-2026-12-03/run.sh: (A) tune --predict, <= 4 launches with the defaults, its winner certified
# (--certify best) on the committed grid's workload and SLO; (B) one tune certifying, beside its own defaults, A's
# winner and the committed grid's best point (256 seqs x 2,048 tokens), each with every knob named.
# Run from a clean clone in /tmp/g2t/code, under the CPU lock; main's venv (the clone's packages come first).
set -u
out=/tmp/g2t
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60"
$py -m tuner.cli $common --trials 4 --predict --certify best --out $out/predict > $out/predict.log 2>&1
echo "predict tune exit $?"; date -u
winner=$($py - <<'PY'
import json
best = json.load(open("/tmp/g2t/predict/best.json"))["best"]
c = best["config"]
if best["trial"] == 0:  # the defaults won: nothing to name
    raise SystemExit(0)
names = ["max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill", "enable_prefix_caching"]
parts = [f"{n}={str(c[n]).lower()}" for n in names if c[n] is not None]
parts.append(f"speculative_method={c['speculative_method'] or 'off'}")
if c["num_speculative_tokens"]:
    parts.append(f"num_speculative_tokens={c['num_speculative_tokens']}")
print(",".join(parts))
PY
)
echo "A's winner: $winner"
grid="max_num_seqs=256,max_num_batched_tokens=2048,max_model_len=4096,enable_chunked_prefill=true,enable_prefix_caching=true,speculative_method=off"
tries="$grid"; [ -n "$winner" ] && tries="$winner;$grid"
$py -m tuner.cli $common --trials 3 --try-first "$tries" --certify each --out $out/h2h > $out/h2h.log 2>&1
echo "head-to-head tune exit $?"; date -u
