#!/usr/bin/env bash
# Regenerate docs/deploy/: the README's `tune export` examples, from the committed A30 longdoc study (both certified).
# vLLM 0.26.0 is not installed here: its flags come from tests/launch/data (its real --help=all lines).
# tests/export/test_examples.py checks that these files are what `tune export` writes today.
set -euo pipefail
cd "$(dirname "$0")/.."
study=results/h200-llama-3-8b-a30-w4a16-longdoc
flags=tests/launch/data/help-options-0.26.0.txt
mkdir -p docs/deploy
for format in compose kubernetes kserve helm; do
  tune export --study "$study" --format "$format" --vllm-help "$flags" --out "docs/deploy/$format.yaml"
done
tune cost --study "$study" > docs/deploy/cost.txt
# docs/deploy.md embeds the Compose file and the cost lines between markers: put the new ones there
python3 - <<'PY'
from pathlib import Path
page = Path("docs/deploy.md")
text = page.read_text()
for name, lang in (("compose.yaml", "yaml"), ("cost.txt", "")):
    begin, end = f"<!-- {name}: begin (scripts/export-examples.sh) -->\n", f"<!-- {name}: end -->\n"
    a, b = text.index(begin) + len(begin), text.index(end)
    text = text[:a] + f"```{lang}\n" + Path("docs/deploy", name).read_text().rstrip() + "\n```\n" + text[b:]
page.write_text(text)
PY
