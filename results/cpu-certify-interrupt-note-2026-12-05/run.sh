#!/bin/bash
# An interrupted certification on vLLM-CPU: tune --trials 1 --certify best with 60-s soaks; SIGINT once the first soak
# has ended; then the same command with --resume. From a clean checkout (/tmp/intr/code), main's venv, CPU lock held.
set -u
out=/tmp/intr
cd $out/code
py=/work/main/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_CI_ENV=1 HF_HUB_OFFLINE=1 PYTHONPATH=$out/code
git log -1 --format='code %h'
args=(--model /tmp/tiny-llama --gpu cpu --slo ttft_p95=2s --workload chat --soak-seconds 60 --certify best --trials 1
      --out $out/study2)
date -u
# a background job of a script starts with SIGINT ignored, and Python then never raises KeyboardInterrupt: restore it
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
  $py -m tuner.cli "${args[@]}" > $out/first2.log 2>&1 &
pid=$!
until grep -q "soak at .* for .*: \(held\|missed\)" $out/first2.log 2>/dev/null; do
  kill -0 $pid 2>/dev/null || break; sleep 2
done
date -u; echo "SIGINT to $pid"
kill -INT $pid; wait $pid; echo "first call exit $?"
echo "vLLM processes left: $(pgrep -fc 'vllm.entrypoints' || true)"
date -u
$py -m tuner.cli "${args[@]}" --resume > $out/resumed2.log 2>&1
echo "resumed call exit $?"; date -u
