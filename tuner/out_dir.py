"""The output folder of a run, claimed before any work: it must be a writable folder (created if
missing), and only one ``tune`` works in it at a time — two at once once raced on one study file and
ended in a traceback. The claim is an advisory lock on ``.slotune.lock`` held for the whole run; the
operating system drops it when the process dies, so a killed run never blocks the next one.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loadtest.writable import check_output_dir
from tuner.errors import UsageError

LOCK_NAME = ".slotune.lock"


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip() or "?"
    except (OSError, UnicodeDecodeError):
        return "?"


@contextmanager
def claimed(folder: Path, what: str = "--out") -> Iterator[Path]:
    """Hold ``folder`` for this run. A folder created here that is still empty afterwards (the run stopped
    on bad input) is removed again."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]  # created here, deepest first
    check_output_dir(folder, what)
    lock = folder / LOCK_NAME
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"{what} {folder}: another tune (pid {_holder(fd)}) is working in that folder; wait for it "
                f"to end, or choose another {what}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield folder
    finally:
        os.close(fd)  # releases the lock
        if missing and [p.name for p in folder.iterdir()] == [LOCK_NAME]:
            lock.unlink(missing_ok=True)
            for made in missing:
                try:
                    made.rmdir()
                except OSError:  # not empty: something else was written there meanwhile
                    break
