"""perfmodel is pure Python: importing it pulls in neither torch, vLLM, transformers nor SciPy (SciPy is
imported only when a calibration is fitted)."""

import subprocess
import sys


def test_import_perfmodel_pulls_in_no_heavy_module():
    code = (
        "import sys, perfmodel.rank, perfmodel.capacity, perfmodel.calibrate, perfmodel.server; "
        "print(','.join(m for m in ('torch', 'vllm', 'transformers', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
