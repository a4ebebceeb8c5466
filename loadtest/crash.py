"""The command lines' last guard: an exception nobody expected (a bug) becomes one line on stderr and a
log file with the traceback (credentials masked), exit 1 — never a raw traceback on the user's screen.

Expected failures (bad input: exit 2; a failed run: exit 1) are handled by each CLI before this.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from loadtest.redact import mask

EXIT_BUG = 1


def one_line(message: str) -> str:
    """A message as one line (a log tail or a library's multi-line text joined with ' | '), masked."""
    return " | ".join(line.strip() for line in mask(str(message)).splitlines() if line.strip())


def crash_dir() -> Path:
    """$SLOTUNE_CACHE_DIR/crash (default ~/.cache/slotune/crash); the temp folder if that is not writable."""
    root = Path(os.environ.get("SLOTUNE_CACHE_DIR") or Path.home() / ".cache" / "slotune")
    folder = root / "crash"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    except OSError:
        return Path(tempfile.gettempdir())


def write_crash_log(prog: str, argv: Sequence[str], exc: BaseException) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    fd, name = tempfile.mkstemp(prefix=f"{prog}-crash-{stamp}-", suffix=".log", dir=crash_dir())
    text = "".join(traceback.format_exception(exc))
    with os.fdopen(fd, "w") as f:
        f.write(mask(f"{prog} {' '.join(argv)}\n\n{text}"))
    return Path(name)


def guarded(prog: str, argv: Sequence[str], body: Callable[[], int]) -> int:
    """``body()``; an unexpected exception → one line naming the crash log, exit 1. Ctrl-C passes through."""
    try:
        return body()
    except Exception as exc:  # the guard's job: any bug ends here
        try:
            where = f"the traceback is in {write_crash_log(prog, argv, exc)}"
        except OSError as log_exc:
            where = f"no traceback was saved ({log_exc})"
        print(
            f"{prog}: internal error: {type(exc).__name__}: {one_line(str(exc))[:300]} — a bug in slotune; "
            f"{where} (please include it in a report)",
            file=sys.stderr,
        )
        return EXIT_BUG
