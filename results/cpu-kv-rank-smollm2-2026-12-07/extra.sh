#!/bin/bash
# Beyond the plan's rule (added after c and d held at 1.3 x, their brackets open): one step at 1.6 x each.
set -u
h=/tmp/kvs/code/results/cpu-kv-rank-smollm2-2026-12-07
bash $h/phase3.sh /tmp/kvs/code /tmp/kvs/out c-64x2048-kv8192 1.734
bash $h/phase3.sh /tmp/kvs/code /tmp/kvs/out d-noprefix-kv6144 1.322
date -u
