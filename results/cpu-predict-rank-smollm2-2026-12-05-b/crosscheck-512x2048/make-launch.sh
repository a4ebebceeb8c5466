#!/bin/bash
# This check's server: the study's launch.sh (../rank/launch.sh) with its two limits changed, nothing else.
#   bash make-launch.sh > DIR/launch.sh; cp ../rank/best.json DIR/; RATE=R bash scripts/cpu-crosscheck.sh DIR 1.0 180
sed -e '192s/--max-num-seqs 256/--max-num-seqs 512/' -e '193s/--max-num-batched-tokens 1024/--max-num-batched-tokens 2048/' \
  "$(dirname "$0")/../rank/launch.sh"
