# Sourced by the H200 scripts: copy the vLLM parts this call carried (.xs0/part00 … .xs5/part05, one per call:
# ../shared/gpu/build-stage's archive re-split into 25-MiB pieces so that a call stays under 64 MiB, the working
# tree's ~35 MiB included) to /tmp/stage, and unpack them once all VLLM_PARTS (default 6) are there. Needs log(). Returns 1 while parts are
# missing (the caller stops: a later call brings the rest). The parts are made here from the archive's pieces with
#   cat .gpu-stage/part* | split -b 25M -d -a 2 - part; then each partNN in its own .xsN/ (ignored via .git/info/exclude).
# Fewer calls: with results/ left out of the checkout but the study's own folder
#   git sparse-checkout set --no-cone '/*' '!/results/' '/results/<study folder>/'   (undo: git sparse-checkout disable)
# the tree that travels read 12 MiB on the device (2026-12-07, against ~36 MiB), so one call carries two parts
# (carry [".xs0", ".xs1"]) and vLLM goes over in three calls. Not yet run through a whole staging.
stage_vllm() {
  mkdir -p /tmp/stage
  for d in .xs[0-9]; do
    for p in "$d"/part*; do [ -f "$p" ] && cp "$p" /tmp/stage/ && log "staged $p"; done
  done
  [ -d /tmp/gpusite/vllm ] && return 0
  [ "$(ls /tmp/stage/part* 2>/dev/null | wc -l)" = "${VLLM_PARTS:-6}" ] || { log "not every part is in /tmp/stage yet"; return 1; }
  cat /tmp/stage/part* | tar -xJ -C /tmp && log "unpacked vLLM"
}
