"""Runs `nvidia-smi topo -m` in the background and keeps its raw text beside the parsed matrix.

Started first (`TopologyCapture.start()`), collected last, so its second or so of NVML start-up
overlaps the torch import instead of adding to the probe's run time.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from harness.analysis.topology import parse_topo_matrix, strip_ansi
from harness.probes.contract import describe_exception, unavailable

COMMAND = ("nvidia-smi", "topo", "-m")
TIMEOUT_S = 20.0


class TopologyCapture:
    """`capture = TopologyCapture.start()` ... `capture.result()` -> topology facts."""

    def __init__(self, process: subprocess.Popen | None, reason: str | None) -> None:
        self.process, self.reason = process, reason

    @classmethod
    def start(cls) -> TopologyCapture:
        if shutil.which(COMMAND[0]) is None:
            return cls(None, f"{COMMAND[0]} not found on PATH (no NVIDIA driver utilities installed)")
        try:
            process = subprocess.Popen(
                COMMAND, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            return cls(None, f"cannot start {' '.join(COMMAND)}: {describe_exception(exc)}")
        return cls(process, None)

    def result(self) -> dict[str, Any]:
        if self.process is None:
            return {
                "command": list(COMMAND),
                "raw_text": unavailable(str(self.reason)),
                "matrix": unavailable(str(self.reason)),
            }
        try:
            out, err = self.process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            reason = unavailable(f"{' '.join(COMMAND)} did not finish within {TIMEOUT_S:g} s")
            return {"command": list(COMMAND), "raw_text": reason, "matrix": reason}
        return topology_from_output(self.process.returncode, out, err)


def topology_from_output(returncode: int, out: bytes, err: bytes) -> dict[str, Any]:
    """Raw text (ANSI escapes removed) and its parsed matrix, or why there is none."""
    raw = strip_ansi(out.decode("utf-8", "replace"))
    if returncode != 0:
        why = (err.decode("utf-8", "replace").strip() or raw.strip() or "no output")[:500]
        reason = unavailable(f"{' '.join(COMMAND)} exited with code {returncode}: {why}")
        return {"command": list(COMMAND), "raw_text": raw or reason, "matrix": reason}
    try:
        matrix: Any = parse_topo_matrix(raw)
    except ValueError as exc:
        matrix = unavailable(f"cannot parse the output: {exc}")
    return {"command": list(COMMAND), "raw_text": raw, "matrix": matrix}
