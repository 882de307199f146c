"""A worker process that ends with its parent, however the parent ends (a SIGKILL runs no `finally`).

`die_with_parent(parent)` asks Linux to SIGKILL this process when the process (strictly: the thread)
that started it ends (prctl PR_SET_PDEATHSIG), then checks that PARENT, the pid its starter passed down
(`PARENT_ENV` in the worker's environment, or an argument), is still its parent: a parent that died before
the request was made is not waited for. Elsewhere than Linux the request is not made; the parent still
ends its workers itself. Standard library only: the probe side (the stress and all-reduce workers) and the
host (the plot worker) share it.
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_ENV = "RIG_DOSSIER_PARENT_PID"


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when its parent ends; exit now if PARENT (default: $RIG_DOSSIER_PARENT_PID) is
    no longer its parent."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # not Linux: the parent still ends its workers itself
    expected = parent if parent is not None else os.environ.get(PARENT_ENV)
    if expected is not None and str(os.getppid()) != str(expected):
        os._exit(1)  # the parent ended before the request was made: nothing will ask this process to stop


def parent_env() -> dict[str, str]:
    """What a parent adds to a worker's environment so that the worker can check it is still its parent."""
    return {PARENT_ENV: str(os.getpid())}
