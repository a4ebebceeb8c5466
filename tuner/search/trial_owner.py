"""Which RUNNING trials have lost their tuner. A trial records its owner (host, process id and the
process's start time) when it is asked for; on resume a RUNNING trial whose owner on this host is gone
is stale at once, and one of another host once its heartbeat is older than the storage's grace period
(Optuna's own rule). A stale trial is stored as interrupted — FAIL, not counted, run again — so a
``kill -9`` costs no slot of the study (it once left a trial RUNNING and the run ended "2/3 finished").
"""

from __future__ import annotations

import os
import socket
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError

OWNER_ATTR = "owner"
RUNNING = optuna.trial.TrialState.RUNNING


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), or None where /proc has no answer."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_tag() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "start": _start_ticks(pid)}


def owner_gone(owner: object) -> bool:
    """True when ``owner`` (an owner_tag) was a process of this host that no longer runs."""
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    started = _start_ticks(pid)
    return owner.get("start") is not None and started is not None and started != owner["start"]  # pid reused


def release_stale_trials(study: optuna.Study) -> list[int]:
    """Store every RUNNING trial whose tuner is gone as interrupted (FAIL, not counted); their numbers."""
    storage = study._storage
    by_heartbeat: set[int] = set()
    if isinstance(storage, optuna.storages.RDBStorage) and storage.heartbeat_interval is not None:
        by_heartbeat = set(storage._get_stale_trial_ids(study._study_id))
    released = []
    for trial in study.get_trials(deepcopy=False, states=(RUNNING,)):
        if trial._trial_id not in by_heartbeat and not owner_gone(trial.user_attrs.get(OWNER_ATTR)):
            continue
        try:
            storage.set_trial_user_attr(trial._trial_id, "interrupted", True)
            storage.set_trial_user_attr(trial._trial_id, "stale", "its tuner stopped without ending it")
            storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
        except UpdateFinishedTrialError:
            continue  # another host released it first
        released.append(trial.number)
    return released
