#!/usr/bin/env bash
# One vllm bench serve run per variant (render.py), the same seed and rate for all (paired prompts and arrivals), a
# fresh server each; A and E again at the end to show the host's drift. Run from the repo root under the CPU lock:
#   flock /tmp/slotune-cpu.lock bash results/cpu-defaults-vs-winner-smollm2-2026-12-06/run.sh /tmp/ablate
set -u
src="${1:?rendered variants}" here=results/cpu-defaults-vs-winner-smollm2-2026-12-06
order="${ORDER:-A-defaults E-winner B-batched512 C-len3072 D-seqs64 E-winner A-defaults}"
i=0
for v in $order; do
  i=$((i + 1))
  echo "[$(date -u +%T)] run $i: $v at ${RATE:-1.2} req/s for ${SECS:-150} s, seed ${SEED:-81}"
  SEED="${SEED:-81}" PORT=$((18200 + i)) RATE="${RATE:-1.2}" bash scripts/cpu-crosscheck.sh "$src/$v" 1.0 "${SECS:-150}" \
    "$here/r${RATE:-1.2}-run$i-$v.json"
done
echo "[$(date -u +%T)] all done"
