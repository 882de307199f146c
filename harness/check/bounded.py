"""A node reading within a time limit, for a scheduler that kills what runs too long (a Slurm prolog
under PrologEpilogTimeout, node-problem-detector's plugin timeout).

A sick GPU can hang an NVML call for minutes, and a call stuck in the kernel cannot be interrupted
from inside the process. So the reader runs as its own process (`python -m harness.probes.check`,
the same reader `dossier check` imports): past the limit it is killed and left behind, and the
reading is one whose every field is unavailable with that reason, which the judgement turns into
INCOMPLETE checks (never a pass). A reader that fails or prints something that is not a reading is
the same, with its own reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from harness.probes.check import FORMAT_VERSION, KIND
from harness.probes.contract import unavailable, utc_now
from harness.schemas import violations

READER = (sys.executable, "-m", "harness.probes.check")
LEFT_BEHIND_S = 1.0  # how long a killed reader is waited for (one stuck in the kernel may never end)
FIELDS = ("hostname", "uptime_s", "kernel_module", "pci_gpus", "kernel_log", "nvml", "devices")


def not_read(why: str) -> dict[str, Any]:
    """A reading with nothing in it, each field unavailable for WHY."""
    reading: dict[str, Any] = {"kind": KIND, "format_version": FORMAT_VERSION, "taken_at": utc_now()}
    return {**reading, **{field: unavailable(why) for field in FIELDS}}


def read_within(seconds: float) -> dict[str, Any]:
    """The node's reading, or, past SECONDS, a reading that says it did not finish."""
    process = subprocess.Popen(READER, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        try:
            process.communicate(timeout=LEFT_BEHIND_S)
        except subprocess.TimeoutExpired:
            pass  # stuck in an uninterruptible call: left behind, the answer is not held up by it
        return not_read(
            f"the node reading did not finish within {seconds:g} s (--timeout): an NVML call or the kernel "
            "log hung (a GPU that stopped answering hangs NVML)"
        )
    tail = " ".join(err.decode("utf-8", "replace").split())[-300:]
    if process.returncode != 0:
        return not_read(f"the node reader exited {process.returncode}: {tail or 'no message'}")
    try:
        reading = json.loads(out)
    except ValueError as exc:
        return not_read(f"the node reader printed no JSON ({exc}): {tail or 'no message'}")
    problems = violations("check-reading", reading)
    return reading if not problems else not_read(f"the node reader printed no reading: {problems[0]}")
