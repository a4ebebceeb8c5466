#!/usr/bin/env bash
# Create the quantization interpreter: a venv of its own with torch (CPU wheel where pip's config
# offers one) and llm-compressor. It is separate from vLLM's environment because llm-compressor
# pins compressed-tensors 0.19 while vLLM pins 0.17.
#
#   bash scripts/install-quantize.sh [VENV_DIR]              (default: .venv-quant in the repo root)
#   bash scripts/install-quantize.sh --autoawq [VENV_DIR]    (default: .venv-awq; AutoAWQ 0.2.9, which is
#                                                            DEPRECATED upstream — optional backend)
#
# Idempotent: an existing venv that already imports the pinned versions is left as it is.
# The last line printed is the interpreter path; point the tuner at it with
#   export SLOTUNE_QUANTIZE_PYTHON=<that path>      (or: tune quantize --quantize-python <path>)
#   export SLOTUNE_AUTOAWQ_PYTHON=<that path>       (for --backend autoawq)
# Environment: PYTHON (base interpreter, default python3), TORCH_SPEC, LLMCOMPRESSOR_SPEC, AUTOAWQ_SPEC.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
backend=llmcompressor
if [[ "${1:-}" == "--autoawq" ]]; then backend=autoawq; shift; fi
base_python="${PYTHON:-python3}"
torch_spec="${TORCH_SPEC:-torch==2.13.0}"
if [[ $backend == autoawq ]]; then
  venv="${1:-$here/.venv-awq}"
  pkg_spec="${AUTOAWQ_SPEC:-autoawq==0.2.9}"
  dist=autoawq module=awq
else
  venv="${1:-$here/.venv-quant}"
  pkg_spec="${LLMCOMPRESSOR_SPEC:-llmcompressor==0.14.0.1}"
  dist=llmcompressor module=llmcompressor
fi
want_torch="${torch_spec#torch==}"
want_pkg="${pkg_spec#*==}"
py="$venv/bin/python"

check() {  # exit 0 when the venv imports the wanted versions and transformers works beside torch
  "$py" - "$want_torch" "$dist" "$want_pkg" "$module" <<'PY' >/dev/null 2>&1
import importlib, sys
from importlib.metadata import version
want_torch, dist, want_pkg, module = sys.argv[1:]
assert version("torch").split("+")[0] == want_torch.split("+")[0], version("torch")
assert version(dist) == want_pkg, version(dist)
import torch, transformers  # noqa: F401,E401
from transformers import AutoModelForCausalLM  # noqa: F401  (breaks when torchvision mismatches)
importlib.import_module(module)
PY
}

start=$(date +%s)
if [[ -x "$py" ]] && check; then
  echo "install-quantize: $venv already has torch $want_torch and $dist $want_pkg" >&2
  echo "$py"
  exit 0
fi

"$base_python" - <<'PY' || { echo "install-quantize: needs Python >= 3.10 (set PYTHON=...)" >&2; exit 2; }
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

# shellcheck source=scripts/uv-pip.sh
. "$here/scripts/uv-pip.sh"  # uv_pip: pip's sources and choices, uv's speed
echo "install-quantize: [1/3] venv at $venv" >&2
"$base_python" -m venv "$venv"
echo "install-quantize: [2/3] $torch_spec (CPU wheel where pip's find-links/index offers one)" >&2
uv_pip "$venv" install "$torch_spec" >&2
echo "install-quantize: [3/3] $pkg_spec (+ its dependencies; torch stays as installed)" >&2
uv_pip "$venv" install "$pkg_spec" "$torch_spec" >&2
# torchvision/torchaudio built for another torch make `import transformers` models fail; we need neither.
for pkg in torchvision torchaudio; do
  if "$py" -m pip show --quiet "$pkg" >/dev/null 2>&1; then
    echo "install-quantize: removing $pkg (not needed; a mismatched build breaks transformers)" >&2
    uv_pip "$venv" uninstall "$pkg" >&2
  fi
done
if ! check; then
  echo "install-quantize: the venv at $venv does not import torch $want_torch + $dist $want_pkg;" \
       "see the pip output above" >&2
  exit 1
fi
echo "install-quantize: done in $(( $(date +%s) - start )) s" >&2
echo "$py"
