"""A stand-in for the tuner, for the "nothing survives the tuner" tests (run as a script).

    python parent_process.py dummy LOG_DIR           # watchdog + a child that forks a grandchild
    python parent_process.py vllm LOG_DIR MODEL PY NAME [API_SERVERS]   # a real vLLM server via start_server

Prints one JSON line {"pgid": ..., "pid": ...} (a server's also its url, log and read-back max_model_len) once
the server is up, then waits until killed or
until its stdin closes (so it cannot outlive a test run that was itself killed).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from launch.config import ServeConfig  # noqa: E402
from launch.server import spawn_watched, start_server  # noqa: E402
from tuner.trial.context import CPU_SERVER_NICE  # noqa: E402

SLEEPER = "import subprocess, time; subprocess.Popen(['sleep', '600']); print('child up', flush=True); time.sleep(600)"


def main() -> None:
    # Ctrl-C as a user at a terminal gives it: a run started in the background inherits SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mode, log_dir = sys.argv[1], Path(sys.argv[2])
    if mode == "dummy":
        proc, _log, pidfile = spawn_watched(
            [sys.executable, "-c", SLEEPER],
            dict(),
            log_dir / "dummy.log",
            2.0,
            on_orphan=["touch", str(log_dir / "cleanup-ran")],
        )
        while not pidfile.exists():
            time.sleep(0.05)
        time.sleep(0.5)  # let the child fork its grandchild
        print(json.dumps({"pgid": proc.pid, "pid": int(pidfile.read_text())}), flush=True)
    else:
        model, python, name = sys.argv[3], sys.argv[4], sys.argv[5]
        api_servers = int(sys.argv[6]) if len(sys.argv) > 6 else None
        config = ServeConfig(model=model, served_model_name=name, max_model_len=512, api_server_count=api_servers)
        # niced as the tuner's trials on the cpu profile are
        server = start_server(
            config, python=python, log_dir=log_dir, warmup_requests=1, grace_s=5.0, nice=CPU_SERVER_NICE
        )
        up = {"pgid": server.pgid, "pid": server.pid, "url": server.url, "log": str(server.log_path)}
        print(json.dumps({**up, "max_model_len": server.readback.max_model_len}), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
