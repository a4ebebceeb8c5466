"""Credentials out of everything slotune prints or writes: ``postgresql://user:PASSWORD@host/db`` becomes
``postgresql://user:***@host/db``, and ``password=…``/``token=…``/``api_key=…`` pairs keep their name only.

Shared by ``loadtest`` and ``tune`` (console lines, error messages, crash logs, best.json, report.html).
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
# scheme://user:password@ — the password runs to the last '@' before the path (it may hold '@' itself)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<password>[^/\s]*)@")
# name=value where the name ends in a secret's word (not max_tokens=…: the word must end the name)
_PAIR = re.compile(
    r"(?P<name>\b\w*(?:password|passwd|pwd|secret|token|api_key|apikey|access_key)=)(?P<value>[^&\s;,'\"]+)",
    re.IGNORECASE,
)


def mask(text: str) -> str:
    """``text`` with every credential replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK + "@", text)
    return _PAIR.sub(lambda m: m["name"] + MASK, text)


def mask_tree(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every string masked."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: mask_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(mask_tree(v) for v in value)
    return value


def without_password(url: str) -> str:
    """``scheme://user:***@host`` → ``scheme://user@host``: the driver then reads the password from its own
    place (PostgreSQL: PGPASSWORD or ~/.pgpass), for a URL read back from a file written masked."""
    return _URL_PASSWORD.sub(lambda m: m["head"][:-1] + "@", url)
