"""Make the shared real-model configs (configs.py) and the bench helpers (bench/budget_vllm_cpu.py)
importable from the budget tests, however pytest is started."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent.parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
