#!/usr/bin/env bash
# Run a command longer than one device call (10 minutes) on the device machine, without cutting it between calls:
#   bash scripts/gpu/h200-bg.sh start WAIT_S CMD [ARG ...]   starts CMD in its own process session, then waits
#   bash scripts/gpu/h200-bg.sh wait WAIT_S                  waits again (the next call, made straight after)
# CMD runs in /tmp/bg/repo, a copy of the tree made at start: each call copies the working tree over the last one's,
# a running study's study.db included. A process in its own session runs on between back-to-back calls while the
# machine stays warm (/work/.library/device/README.md), so a certification's soaks are not cut by each call's limit
# as a SIGINT'd tune's were. Each call waits until CMD has ended or WAIT_S seconds have passed, then copies to $OUT:
# CMD's output (bg.log), its exit code once it has one (bg.rc), the files CMD wrote under its $OUT (/tmp/bg/out), and
# BG_KEEP's study (a folder under /tmp/bg/repo: study.db through SQLite's backup, and its outputs), so that a machine
# lost between calls loses at most the soak in flight: the next machine resumes from those files.
set -uo pipefail
what="${1:?start|wait}" wait_s="${2:?WAIT_S}"
shift 2
bg=/tmp/bg
if [ "$what" = start ]; then
  [ -f "$bg/pid" ] && kill -0 "$(cat "$bg/pid")" 2>/dev/null && { echo "h200-bg: a job is running already" >&2; exit 2; }
  rm -rf "$bg" && mkdir -p "$bg/out" "$bg/repo"
  # a copy of the tree to run in: each call copies the working tree over the last one's, study.db included
  tar -c --exclude='./.xs[0-9]' --exclude=./.git --exclude='./.venv*' --exclude=./.gpu-stage . | tar -x -C "$bg/repo"
  (cd "$bg/repo" && OUT="$bg/out" setsid bash -c '"$@" > /tmp/bg/log 2>&1; echo $? > /tmp/bg/rc' bash "$@" < /dev/null &
   echo $! > "$bg/pid")
  echo "h200-bg: started $* (pid $(cat "$bg/pid"))"
fi
[ -f "$bg/pid" ] || { echo "h200-bg: no job on this machine (a fresh one?): start it again" >&2; exit 2; }
T0=$(date +%s)
while [ ! -f "$bg/rc" ] && [ $(( $(date +%s) - T0 )) -lt "$wait_s" ]; do sleep 5; done
tail -n 40 "$bg/log"
cp "$bg/log" "$OUT/bg.log"
[ -f "$bg/rc" ] && cp "$bg/rc" "$OUT/bg.rc" && echo "h200-bg: the job ended, exit code $(cat "$bg/rc")"
for f in "$bg"/out/*; do [ -f "$f" ] && [ "$(basename "$f")" != gpu-cache.tgz ] && cp "$f" "$OUT/"; done
keep="$bg/repo/${BG_KEEP:-}"
if [ -n "${BG_KEEP:-}" ] && [ -f "$keep/study.db" ]; then
  mkdir -p "$OUT/keep"
  python3 -c "import sqlite3, sys; src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2]); src.backup(dst)" \
    "$keep/study.db" "$OUT/keep/study.db"
  for f in best.json trials.csv launch.sh report.html; do [ -f "$keep/$f" ] && cp "$keep/$f" "$OUT/keep/"; done
fi
echo "h200-bg: waited $(( $(date +%s) - T0 )) s"
