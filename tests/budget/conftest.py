"""Make the shared real-model configs (configs.py) importable from the budget tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
