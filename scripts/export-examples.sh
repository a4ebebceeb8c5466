#!/usr/bin/env bash
# Regenerate docs/deploy/: the README's `tune export` examples, from the committed A30 study.
# vLLM 0.26.0 is not installed here: its flags come from tests/launch/data (its real --help=all lines).
# tests/export/test_examples.py checks that these files are what `tune export` writes today.
set -euo pipefail
cd "$(dirname "$0")/.."
study=results/h200-llama-3-8b-a30
flags=tests/launch/data/help-options-0.26.0.txt
mkdir -p docs/deploy
for format in compose kubernetes kserve helm; do
  tune export --study "$study" --format "$format" --vllm-help "$flags" --out "docs/deploy/$format.yaml"
done
tune cost --study "$study" > docs/deploy/cost.txt
