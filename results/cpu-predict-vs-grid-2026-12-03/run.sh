#!/bin/bash
# G2 on the CPU, head to head in one sitting: (A) tune --predict, <= 4 launches with the defaults, on the committed
# grid's workload and SLO; (B) one tune certifying, beside its own defaults, A's winner and the committed grid's
# best point (256 seqs x 2,048 tokens), each with every knob named so the sampler draws none.
cd /tmp/g2d/code
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1
git log -1 --format='code %h %cd'
date -u
common="--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --certify each --soak-seconds 60"
.venv/bin/python -m tuner.cli $common --trials 4 --predict --out /tmp/g2d/predict > /tmp/g2d/predict.log 2>&1
echo "predict tune exit $?"; date -u
winner=$(.venv/bin/python - <<'PY'
import json
best = json.load(open("/tmp/g2d/predict/best.json"))["best"]
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
.venv/bin/python -m tuner.cli $common --trials 3 --try-first "$tries" --out /tmp/g2d/h2h > /tmp/g2d/h2h.log 2>&1
echo "head-to-head tune exit $?"; date -u
