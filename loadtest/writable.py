"""Outputs checked before any work starts: a run that measures for minutes and then cannot write its
results has lost them. Checked by really creating a file (``os.access`` says yes to root on a read-only
file system), and removing it again.

Shared by ``loadtest`` (``--json``, ``--per-request``) and ``tune`` (``--out``, the study, ``tune init``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from loadtest.errors import LoadtestInputError


class NotWritable(LoadtestInputError):
    """An output cannot be written; the message names the path, why and the fix."""


def _probe(folder: Path, what: str) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=".slotune-write-check-", dir=folder)
    except OSError as exc:
        raise NotWritable(
            f"{what} {folder}: cannot write into that folder ({exc.strerror or exc}); choose a writable one"
        ) from None
    os.close(fd)
    os.unlink(name)


def check_output_dir(path: str | Path, what: str) -> Path:
    """Create folder ``path`` (with its parents) if needed and make sure files can be written in it."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NotWritable(f"{what} {folder}: is a file, not a folder; choose a folder (it is created if missing)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NotWritable(
            f"{what} {folder}: cannot create that folder ({exc.strerror or exc}); choose a writable place"
        ) from None
    _probe(folder, what)
    return folder


def check_output_file(path: str | Path, what: str) -> Path:
    """Make sure ``path`` can be written (its folder exists and is writable; not a folder itself)."""
    file = Path(path)
    if file.is_dir():
        raise NotWritable(f"{what} {file}: is a folder; give a file name")
    folder = file.parent
    if not folder.is_dir():
        raise NotWritable(f"{what} {file}: folder {folder} does not exist; create it or choose another path")
    _probe(folder, what)
    if file.exists() and not os.access(file, os.W_OK):
        raise NotWritable(f"{what} {file}: the file exists and is not writable; choose another path")
    return file
