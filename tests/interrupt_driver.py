"""A host that runs one probe through the local runner, as `dossier` does, and can be interrupted.

`python -m tests.interrupt_driver LINES PROBE ARGS...`: every stderr line of the probe is appended
to LINES as it arrives (the test waits there for the probe's first progress line, then sends this
process SIGINT, as Ctrl-C at a terminal would). Exits 130 when interrupted, else the probe's code.
"""

from __future__ import annotations

import sys

from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner


def main(argv: list[str]) -> int:
    lines_path, probe, *args = argv
    with open(lines_path, "a", encoding="utf-8") as lines:

        def on_line(line: str) -> None:
            lines.write(line + "\n")
            lines.flush()

        try:
            run = LocalRunner().run(ProbeInvocation(probe, tuple(args), timeout_s=600), on_stderr_line=on_line)
        except KeyboardInterrupt:
            lines.write("##driver interrupted\n")
            return 130
    return run.exit_code if run.exit_code is not None else 124


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
