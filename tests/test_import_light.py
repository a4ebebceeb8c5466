import subprocess
import sys


def test_import_loadtest_pulls_in_no_heavy_module():
    code = (
        "import sys, loadtest, loadtest.cli, loadtest.runner, loadtest.workload, loadtest.metrics; "
        "print(','.join(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
