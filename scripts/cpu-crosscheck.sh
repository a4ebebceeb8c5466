#!/usr/bin/env bash
# Cross-check a study's certified rate with vLLM's own benchmark client on vLLM-CPU: start the study's launch.sh on a
# fresh server, send FACTOR x best.json's certified rate for SECONDS (Poisson, bench/vllm_bench_check.py, the module
# behind `vllm bench serve`), then stop the server. Model, workload, output tokens and SLOs come from best.json, the
# served name from launch.sh. Run from the repo root under the CPU lock (vLLM busy-polls both cores):
#   flock /tmp/slotune-cpu.lock bash scripts/cpu-crosscheck.sh STUDY_DIR [FACTOR] [SECONDS] [JSON_OUT]
# JSON_OUT defaults to STUDY_DIR/crosscheck-vllm-bench-<FACTOR>x.json (crosscheck-loadtest-bench-… with
# CLIENT=loadtest). RATE=R: FACTOR x R instead of the certified
# rate (a study's search estimate, which no soak certified). Exit 2 when the study states no certified rate and no
# RATE is given, or its server does not come up within START_TIMEOUT (300) s; otherwise the benchmark's exit code.
# REPEAT=N: N benchmarks back to back on the one fresh server (JSON_OUT gains -run<i>), run i with seed SEED + i - 1:
# prompts sent again would be answered from the prefix cache. SEED: 31 unless given.
# TRIAL=N: serve trial N of the study instead of its winner (bench/trial_launch.py renders its launch.sh as the study's
# own is rendered; JSON_OUT defaults to STUDY_DIR/crosscheck-vllm-bench-trialN-<FACTOR>x.json), at the same rates.
# CLIENT=loadtest: slotune's own `loadtest` sends the load instead of vLLM's client (the same rate, seconds, seed,
# workload, output tokens and SLO; its JSON is loadtest's report, judged by its steadiness rules too).
# SLOW=F: the server runs as on a host F times slower while the benchmarks run (bench/slowed_host.py stops its
# process group for 1 - 1/F of every 50 ms; the realized factor goes to JSON_OUT's -slowed.txt).
set -u
dir="${1:?study folder}" factor="${2:-1.0}" secs="${3:-120}"
json="${4:-$dir/crosscheck-${CLIENT:-vllm}-bench-${TRIAL:+trial$TRIAL-}${factor}x.json}"
py=".venv/bin/python"
if [ -n "${TRIAL:-}" ]; then
  served_dir=$(mktemp -d /tmp/cpu-crosscheck-trial-XXXX)
  "$py" bench/trial_launch.py "$dir" "$TRIAL" "$served_dir" || exit 2
  dir="$served_dir"
fi
port="${PORT:-18134}"
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_CI_ENV="${VLLM_CPU_CI_ENV:-1}"  # 0: vLLM's default compile path
read -r rate model workload out_tokens slo < <("$py" - "$dir/best.json" "$factor" <<'PY'
import json, os, sys
b = json.load(open(sys.argv[1]))
rate = float(os.environ.get("RATE") or 0) or b.get("certified_rate_req_s")
if not rate:
    sys.exit(f"{sys.argv[1]}: no certified rate to cross-check (RATE=R checks another)")
s = b["settings"]
print(round(float(sys.argv[2]) * rate, 3), s["model"], s["workload"], s["output_tokens"] or "-", b["slo"])
PY
) || exit 2
name=$(sed -n 's/^SERVED_NAME=//p' "$dir/launch.sh" | head -1)
log=$(mktemp /tmp/cpu-crosscheck-XXXX.log)
PORT=$port setsid bash "$dir/launch.sh" > "$log" 2>&1 &
pid=$!
slower=""
unslow() { [ -n "$slower" ] && kill -TERM "$slower" 2>/dev/null && wait "$slower"; slower=""; }
trap 'unslow; kill -CONT -- -$pid 2>/dev/null; kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null' EXIT
for _ in $(seq "${START_TIMEOUT:-300}"); do grep -q "ready: http" "$log" && break; sleep 1; done
grep -q "ready: http" "$log" || { echo "cpu-crosscheck: $dir/launch.sh not ready (log $log):"; tail -5 "$log"; exit 2; }
grep -E "launch.sh: (WARNING|a fixed request)" "$log"  # the machine's and the pace's checks (launch.machine, launch.pace)
echo "[$(date -u +%T)] $(grep "ready: http" "$log")"
more=(); [ "$out_tokens" != "-" ] && more=(--output-tokens "$out_tokens")
slow_from() {  # slow the server from now on, logging the realized factor to $1
  "$py" bench/slowed_host.py --pgid "$pid" --factor "$SLOW" --report "$1" & slower=$!
}
[ -n "${SLOW:-}" ] && slow_from "${json%.json}-slowed.txt"
repeat="${REPEAT:-1}" rc=0
for i in $(seq "$repeat"); do
  out="$json"; [ "$repeat" -gt 1 ] && out="${json%.json}-run$i.json"
  seed=$(( ${SEED:-31} + i - 1 ))
  if [ "${CLIENT:-vllm}" = loadtest ]; then
    echo "[$(date -u +%T)] slotune loadtest at $rate req/s for $secs s (run $i of $repeat on this server)"
    .venv/bin/loadtest --url "http://127.0.0.1:$port" --model "$name" --tokenizer "$model" --workload "$workload" \
      "${more[@]}" --rate "$rate" --duration "$secs" --slo "$slo" --seed "$seed" --json "$out" 2>&1 | grep -v "^\s*$"
    rc=${PIPESTATUS[0]}
    echo "[$(date -u +%T)] done: $out"
    continue
  fi
  echo "[$(date -u +%T)] vllm bench serve at $rate req/s for $secs s (run $i of $repeat on this server)"
  "$py" bench/vllm_bench_check.py --url "http://127.0.0.1:$port" --model "$name" --tokenizer "$model" \
    --workload "$workload" "${more[@]}" --rate "$rate" --seconds "$secs" --slo "$slo" --seed "$seed" --json "$out" --server-pid "$pid" 2>&1 \
    | grep -v "it/s\]" | grep -E "P95 TTFT|P95 TPOT|Request throughput|Successful|Failed|held|vllm_bench_check:"
  rc=${PIPESTATUS[0]}
  echo "[$(date -u +%T)] done: $out"
done
unslow  # bench/slowed_host.py prints the realized factor
exit "$rc"
