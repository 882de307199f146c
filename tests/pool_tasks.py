"""A task function for the fleet pool's tests (tests/fleet/test_fleet_pool.py), importable by its workers
without the harness: ("ok", n) -> n * n; ("raise", n) raises; ("kill", n) is killed by SIGKILL;
("hang", n) never returns."""

from __future__ import annotations

import os
import signal


def pool_task(task: tuple[str, int]) -> int:
    kind, n = task
    if kind == "raise":
        raise ValueError(f"task {n} is broken")
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "hang":
        signal.pause()
    return n * n
