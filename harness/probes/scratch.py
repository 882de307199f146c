"""Temporary folders that a killed process does not leave behind for long.

`scratch(prefix)` is tempfile.TemporaryDirectory with an owner record in it (`.owner`: the process's pid
and its start time, from /proc/PID/stat): removed on exit as before, and a folder of PREFIX that a
SIGKILL left (no `finally` runs then) is removed the next time one is made, once its owner is no
longer running (a pid that is gone, or reused by a process started at another time). Only folders
with an owner record, of this user, directly in the temporary folder are ever removed. Standard library
only: the probe side (the stress probe's workers' folder) and the host (the plot worker's) share it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

OWNER = ".owner"


def _started(pid: int) -> str | None:
    """PID's start time in clock ticks since boot (/proc/PID/stat field 22), or None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # the fields after the command name, which may hold spaces


def _running(owner: dict) -> bool:
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process holds the pid: not ours, not running
        return False
    started = _started(pid)
    return started is None or owner.get("started") in (None, started)


def sweep(prefix: str, root: Path | None = None) -> list[Path]:
    """Remove the folders ROOT/PREFIX* (the temporary folder) whose owner no longer runs; returns them."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    for folder in root.glob(f"{prefix}*"):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            owner = json.loads((folder / OWNER).read_text())
        except (OSError, ValueError):
            continue  # no owner record: not one of ours, or still being made
        if isinstance(owner, dict) and not _running(owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def scratch(prefix: str, family: str | None = None) -> Iterator[str]:
    """A fresh temporary folder (its path) named PREFIX..., removed on exit; the folders of FAMILY (a prefix
    of PREFIX; default PREFIX) that killed processes left are removed first."""
    sweep(family or prefix)
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        owner = {"pid": os.getpid(), "started": _started(os.getpid())}
        (Path(folder) / OWNER).write_text(json.dumps(owner))
        yield folder


def owned_folder(prefix: str) -> Path:
    """A fresh temporary folder named PREFIX... for the rest of this process, removed at its exit; the
    folders of PREFIX that killed processes left are removed first."""
    sweep(prefix)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    (folder / OWNER).write_text(json.dumps({"pid": os.getpid(), "started": _started(os.getpid())}))
    atexit.register(shutil.rmtree, folder, True)
    return folder
