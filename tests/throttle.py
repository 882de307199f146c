"""Run a command with its whole process tree held to a share of the CPU, like a node stuck at a
low clock: a real slowdown for the fleet outlier test (used as a `--node-prefix`).

    python tests/throttle.py --share 0.3 -- COMMAND ARGS...

Every PERIOD the tree runs for SHARE of it and is stopped (SIGSTOP) for the rest, the way
`cpulimit` works. The tree is found through /proc each period, so probes the command starts
in their own sessions are held too. A thread count is no use here: on a busy 2-core host one
thread is as often faster than two as slower.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from pathlib import Path


def tree(root: int) -> list[int]:
    """ROOT and every process descended from it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--share", type=float, default=0.3, help="fraction of each period the tree runs")
    parser.add_argument("--period", type=float, default=0.05, metavar="SECONDS")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command)
    held = [child.pid]
    try:
        while child.poll() is None:
            time.sleep(args.period * args.share)
            signal_all(held, signal.SIGSTOP)
            stopped_at = time.monotonic()
            held = tree(child.pid)  # looked up while the tree is stopped: the scan costs it no run time
            signal_all(held, signal.SIGSTOP)
            time.sleep(max(0.0, args.period * (1 - args.share) - (time.monotonic() - stopped_at)))
            signal_all(held, signal.SIGCONT)
    finally:
        signal_all(held, signal.SIGCONT)
    return child.wait()


if __name__ == "__main__":
    raise SystemExit(main())
