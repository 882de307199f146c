"""A busy host process for the host contention tests: `python -m tests.cotenant SECONDS` names itself
cotenant-spin (its /proc/PID/comm) and spins on one CPU until killed, or for SECONDS at most (so a test
that dies leaves nothing spinning for long on a machine others share)."""

import sys
import time

NAME = "cotenant-spin"


def main() -> None:
    with open("/proc/self/comm", "w") as comm:
        comm.write(NAME)
    deadline = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < deadline:
        pass


if __name__ == "__main__":
    main()
