#!/usr/bin/env bash
# Cross-check a study's certified rate with vLLM's own benchmark client (bench/vllm_bench_check.py, the module behind
# `vllm bench serve`) on the H200 test machine, after vLLM was brought over (../shared/gpu/README.md):
#   bash scripts/gpu/h200-crosscheck.sh STUDY_DIR FACTOR SECONDS LIMIT_S DEST
# The server runs the best trial's *launched* configuration from STUDY_DIR/best.json (with --emulate-on its
# gpu_memory_utilization rescaled to the H200, as the trials and soaks ran; launch.sh carries the target GPU's value)
# and its KV cache pinned as launch.sh pins it (best.deployed), through launch.command.build_command, the argv and
# environment a trial gets. Once it is ready (and two warm-up
# requests answered, as launch.sh does), the benchmark sends FACTOR x the certified rate for SECONDS at a Poisson rate.
# Writes DEST/crosscheck-vllm-bench-<FACTOR>x.json, DEST/crosscheck.log (this script's lines, the server's memory
# lines, vLLM's /metrics counters before and after). Gives up after LIMIT_S in all; the server is always stopped.
# CROSSCHECK_POINT=GRID_JSONL: serve instead the first row's launched configuration of a grid file (bench/search_vs_grid.py
# --out's grid.jsonl), as the grid measured it (its own KV budget, nothing pinned), at FACTOR x STUDY_DIR's certified
# rate: another configuration held at the very rates the study's winner was checked at. CROSSCHECK_KV_BYTES=N pins
# its KV cache at N bytes (kv_cache_memory_bytes, as launch.sh pins a winner's), so that it keeps the grid's KV tokens.
# CROSSCHECK_GMU=U serves it with gpu_memory_utilization U instead (the A30's memory emulated on another card).
# CROSSCHECK_SIDE=baseline: serve vLLM's defaults of best.json (as launched, with their KV pin where they have one) at
# the same rates, to set them beside the winner under one client.
# CROSSCHECK_WORKLOAD=W: the benchmark's prompts from that workload (default chat: the studies these scripts made).
# CROSSCHECK_EXPECT_KV=N: measure only where vLLM sized the KV cache within 2 % of N tokens (else exit 3, nothing
# measured): an unpinned point's KV moves with the start (a compiling start left 13 % less on 2026-12-07).
# CROSSCHECK_STEPS="F:S F:S ...": several benchmark runs on the one server, back to back, each at F x the certified
# rate for S seconds and waiting for its requests (e.g. "1.0:120 1.3:60 1.0:120": does an overload leave the server
# slower?); CROSSCHECK_SEEDS="41 42 43" their prompt seeds (without steps, one seed: the single run's). Each writes
# crosscheck-vllm-bench-<FACTOR>x-run<I>-<F>x.json.
set -uo pipefail
dir="${1:?study dir}" factor="${2:-0.95}" secs="${3:-120}" limit="${4:-300}" dest="${5:?dest dir}"
steps="${CROSSCHECK_STEPS:-}"
read -r -a seeds <<< "${CROSSCHECK_SEEDS:-}"
if [ -n "$steps" ]; then  # the runs' seconds, and 20 s for each drain, must fit the limit after the start
  secs=0; for st in $steps; do secs=$(( secs + ${st#*:} + 20 )); done
fi
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
mkdir -p "$dest"
rm -f /tmp/xcheck/trial
log() { echo "[crosscheck $(el)s $(date -u +%H:%M:%SZ)] $*" | tee -a "$dest/crosscheck.log"; }
source scripts/gpu/h200-env.sh
port=8011
url=http://127.0.0.1:$port
python3 - "$dir/best.json" "$factor" "$port" /tmp/xcheck <<'PY' || { log "no certified best in $dir/best.json"; exit 1; }
import json, os, sys
from pathlib import Path
from launch.command import build_command
from launch.config import ServeConfig
from launch.vllm_info import probe_vllm
best, factor, port, out = json.loads(Path(sys.argv[1]).read_text()), float(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
rate = best["certified_rate_req_s"]
if not rate:
    sys.exit(1)
point = os.environ.get("CROSSCHECK_POINT")
if point:  # a grid row's launched configuration, as the grid measured it
    row = json.loads(Path(point).read_text().splitlines()[0])
    cfg, deployed = ServeConfig.from_dict(row["result"]["launched"]), {}
    if os.environ.get("CROSSCHECK_GMU"):
        cfg = ServeConfig.from_dict({**cfg.to_dict(), "gpu_memory_utilization": float(os.environ["CROSSCHECK_GMU"])})
    if os.environ.get("CROSSCHECK_KV_BYTES"):
        deployed = {"kv_cache_memory_bytes": int(os.environ["CROSSCHECK_KV_BYTES"])}
    print(f"serving {point}'s point {row['point']}, not the study's winner", file=sys.stderr)
else:  # CROSSCHECK_SIDE=baseline: vLLM's defaults as the study launched them, at the same rates
    side = best[os.environ.get("CROSSCHECK_SIDE") or "best"]
    cfg = ServeConfig.from_dict(side["launched"] or side["config"])
    deployed = side.get("deployed") or {}
if deployed.get("kv_cache_memory_bytes"):  # launch.sh's pin (tuner.trial.kv_pin): the trial's KV blocks
    cfg = ServeConfig.from_dict({**cfg.to_dict(), "kv_cache_memory_bytes": deployed["kv_cache_memory_bytes"]})
argv, env = build_command(cfg, probe_vllm(sys.executable), host="127.0.0.1", port=port)
out.mkdir(parents=True, exist_ok=True)
if not point:
    (out / "trial").write_text(f"{side['trial']}\n")
(out / "argv").write_text("\0".join(argv) + "\0")
(out / "env").write_text("".join(f"{k}={v}\0" for k, v in env.items()))
(out / "rate").write_text(f"{round(factor * rate, 3)}\n")
(out / "certified").write_text(f"{rate}\n")
(out / "served").write_text(cfg.served_model_name or Path(cfg.model).name)
PY
mapfile -d '' argv < /tmp/xcheck/argv
mapfile -d '' envs < /tmp/xcheck/env
rate=$(cat /tmp/xcheck/rate) served=$(cat /tmp/xcheck/served)
log "${CROSSCHECK_POINT:+the point of $CROSSCHECK_POINT, at the rates of the study; }trial $(cat /tmp/xcheck/trial 2>/dev/null || echo '-')${CROSSCHECK_SIDE:+ ($CROSSCHECK_SIDE)}, certified $(cat /tmp/xcheck/certified) req/s; $factor x = $rate req/s for $secs s"
log "server: ${envs[*]} ${argv[*]}"
env "${envs[@]}" setsid "${argv[@]}" > /tmp/xcheck/server.log 2>&1 &
spid=$!
stop() {
  kill -TERM -- -"$spid" 2>/dev/null; sleep 5; kill -KILL -- -"$spid" 2>/dev/null
  grep -E "Actual usage is|Available KV cache memory|specified by kv_cache_memory_bytes|GPU KV cache size|Maximum concurrency|Error|[Gg]raph|[Bb]ackend|[Cc]ompil|profil" /tmp/xcheck/server.log \
    | cut -c1-400 >> "$dest/crosscheck.log"
}
trap stop EXIT
snap() {
  python3 -c "import urllib.request as u; print(u.urlopen('$url/metrics', timeout=5).read().decode())" 2>/dev/null \
    | grep -E '^vllm:(num_requests_running|num_requests_waiting|num_preemptions|kv_cache_usage|request_success|generation_tokens_total|prompt_tokens_total)' \
    | sed "s/^/$1 /" >> "$dest/crosscheck.log"
}
until python3 -c "import urllib.request as u; u.urlopen('$url/health', timeout=2)" 2>/dev/null; do
  kill -0 "$spid" 2>/dev/null || { log "server died"; tail -c 3000 /tmp/xcheck/server.log >> "$dest/crosscheck.log"; exit 1; }
  [ "$(el)" -lt $(( limit - secs - 30 )) ] || {
    log "server not ready after $(el) s: LIMIT_S $limit leaves SECONDS $secs + 30 s; raise LIMIT_S or lower SECONDS"
    exit 1; }
  sleep 1
done
log "server ready"
kv=$(grep -o "GPU KV cache size: [0-9,]* tokens" /tmp/xcheck/server.log | tail -1 | tr -dc 0-9)
if [ -n "${CROSSCHECK_EXPECT_KV:-}" ] && [ -n "$kv" ] \
  && [ "$(python3 -c "print(int(abs($kv - $CROSSCHECK_EXPECT_KV) > 0.02 * $CROSSCHECK_EXPECT_KV))")" = 1 ]; then
  log "KV cache $kv tokens, not the $CROSSCHECK_EXPECT_KV asked for (CROSSCHECK_EXPECT_KV, 2 %): nothing measured"
  exit 3  # a start that compiled leaves less memory for the KV cache: the next (warm) start may size it right
fi
for i in 1 2; do  # launch.sh's two warm-up requests
  python3 -c "import json,urllib.request as u; u.urlopen(u.Request('$url/v1/completions', data=json.dumps({'model':'$served','prompt':'Warm up the server.','max_tokens':8,'temperature':0}).encode(), headers={'Content-Type':'application/json'}), timeout=120).read()"
done
snap before
bench() {  # RATE SECONDS SEED JSON: one run of vLLM's benchmark client
  timeout "$(( limit - $(el) - 10 ))" python3 bench/vllm_bench_check.py --url "$url" --model "$served" --tokenizer "$model" \
    --workload "${CROSSCHECK_WORKLOAD:-chat}" --rate "$1" --seconds "$2" ${3:+--seed "$3"} --slo ttft_p95=2s,tpot_p95=60ms --json "$4" \
    > /tmp/xcheck/bench.log 2>&1
  log "bench exit code $?"
  tail -c 4000 /tmp/xcheck/bench.log | tee -a "$dest/crosscheck.log"
}
if [ -z "$steps" ]; then
  [ "${#seeds[@]}" -le 1 ] || { log "CROSSCHECK_SEEDS names ${#seeds[@]} seeds for one run: give one, or CROSSCHECK_STEPS"; exit 2; }
  seed=${seeds[0]:-}
  log "vllm bench at $factor x = $rate req/s for $secs s${seed:+, seed $seed}"
  bench "$rate" "$secs" "$seed" "$dest/crosscheck-vllm-bench-${factor}x.json"
else
  i=0
  for st in $steps; do
    f=${st%:*} s=${st#*:} seed=${seeds[$i]:-}; i=$(( i + 1 ))
    r=$(python3 -c "print(round($f * $(cat /tmp/xcheck/certified), 3))")
    log "run $i of $steps: vllm bench at $f x = $r req/s for $s s${seed:+, seed $seed}"
    bench "$r" "$s" "$seed" "$dest/crosscheck-vllm-bench-${factor}x-run$i-${f}x.json"
    snap "after-run$i"
  done
fi
[ -z "$steps" ] && snap after
log "done"
