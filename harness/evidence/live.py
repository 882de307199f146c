"""What the node gives a vendor ticket now, taken live when `dossier evidence` runs on the node the
bundle was measured on: the node reading (`dossier check`'s: ECC, row remaps, retired pages, the
driver's kernel-log lines), each GPU's identity (serial, VBIOS, InfoROM: harness/probes/check/),
the kernel log's XIDs in the window of the bundle's run, `nvidia-smi -q` and, where it is
installed, `nvidia-bug-report.sh` (NVIDIA's RMA process asks for its output taken right after the
fault). Every tool runs with a time bound; what cannot be had is {"unavailable": reason} with the
real cause: another host than the bundle's, a tool not installed, one that failed or ran too long.
"""

from __future__ import annotations

import datetime as dt
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.check import xid
from harness.check.bounded import read_within
from harness.probes.contract import describe_exception, unavailable

WINDOW_BEFORE_S = 600.0  # the kernel-log window opens this long before the bundle's run started
MAX_TOOL_BYTES = 48 << 20  # a tool's output kept in the archive (a bug report is a few MiB)
TAIL = 300


@dataclass(frozen=True)
class Timeouts:
    reading_s: float = 30.0  # the node reading (a hung NVML call is a sick GPU's sign)
    smi_s: float = 60.0  # nvidia-smi -q
    bug_report_s: float = 300.0  # nvidia-bug-report.sh: minutes on a large node


@dataclass
class Live:
    """The live pieces (name -> the member holding it, or why not) and the members' bytes."""

    pieces: dict[str, Any] = field(default_factory=dict)
    members: dict[str, bytes] = field(default_factory=dict)

    def add(self, piece: str, member: str, data: bytes | dict[str, Any]) -> None:
        """DATA (bytes, or a reason it could not be had) as PIECE."""
        if isinstance(data, dict):
            self.pieces[piece] = data
        else:
            self.pieces[piece] = {"members": [member], "source": "live"}
            self.members[member] = data


def elsewhere(bundle_host: Any, here: str | None = None) -> str | None:
    """Why this host is not the bundle's node (None when it is: the same host name)."""
    here = here if here is not None else socket.gethostname()
    if not isinstance(bundle_host, str):
        return f"the bundle records no host name ({bundle_host!r}): this host ({here}) cannot be told to be its node"
    if bundle_host.split(".")[0] != here.split(".")[0]:
        return f"this host ({here}) is not the node the bundle was measured on ({bundle_host}): run `dossier evidence` there"
    return None


def run_tool(argv: list[str], timeout_s: float, what: str) -> bytes | dict[str, Any]:
    """The tool's stdout, or why there is none (not installed, failed, past its time bound)."""
    found = shutil.which(argv[0])
    if found is None:
        return unavailable(f"{argv[0]} is not on PATH ({what} is not installed on this host)")
    try:
        done = subprocess.run([found, *argv[1:]], capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return unavailable(f"{' '.join(argv)} did not finish within {timeout_s:g} s")
    except OSError as exc:
        return unavailable(f"{' '.join(argv)}: {describe_exception(exc)}")
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).decode("utf-8", "replace").split())[-TAIL:]
        return unavailable(f"{' '.join(argv)} exited {done.returncode}: {tail or 'no message'}")
    if len(done.stdout) > MAX_TOOL_BYTES:
        return unavailable(f"{' '.join(argv)} wrote {len(done.stdout)} bytes, over the {MAX_TOOL_BYTES} kept")
    return done.stdout


def bug_report(timeout_s: float) -> bytes | dict[str, Any]:
    """nvidia-bug-report.sh's compressed log (it needs root), or why there is none."""
    with tempfile.TemporaryDirectory(prefix="dossier-bug-report-") as folder:
        base = Path(folder) / "nvidia-bug-report.log"
        ran = run_tool(["nvidia-bug-report.sh", "--output-file", str(base)], timeout_s, "NVIDIA's driver package")
        if isinstance(ran, dict):
            return ran
        written = base.with_name(base.name + ".gz")
        if not written.is_file():
            return unavailable(f"nvidia-bug-report.sh exited 0 but wrote no {written.name}")
        data = written.read_bytes()
        return data if len(data) <= MAX_TOOL_BYTES else unavailable(f"{written.name} is {len(data)} bytes, too large")


def _seconds(stamp: Any) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def kernel_window(reading: dict[str, Any], run_started_at: Any) -> dict[str, Any]:
    """The driver's kernel-log lines from WINDOW_BEFORE_S before the run started until now, and their XIDs."""
    log, uptime = reading.get("kernel_log"), reading.get("uptime_s")
    if not isinstance(log, dict) or "lines" not in log:
        return unavailable(f"the kernel log: {(log or {}).get('unavailable', 'not read')}")
    taken, started = _seconds(reading.get("taken_at")), _seconds(run_started_at)
    if not isinstance(uptime, (int, float)) or taken is None or started is None:
        return unavailable(f"the window cannot be placed: uptime {uptime!r}, run started {run_started_at!r}")
    boot = taken - uptime
    opens = started - WINDOW_BEFORE_S - boot  # seconds since boot
    note = (
        "the node has booted since the run started: the kernel log of the run is gone; lines since boot"
        if started < boot
        else f"from {WINDOW_BEFORE_S:g} s before the run started until the reading"
    )
    lines = [line for line in log["lines"] if line["uptime_s"] >= opens]
    fatal = xid.fatal()
    events = [
        {**vars(e), "fatal": e.xid in fatal, "what": fatal[e.xid]["what"] if e.xid in fatal else None}
        for e in xid.parse(lines)
    ]
    return {"source": log["source"], "window": note, "opens_uptime_s": max(opens, 0.0), "lines": lines, "xids": events}


def take(bundle_host: Any, run_started_at: Any, timeouts: Timeouts, say: Callable[[str], None]) -> Live:
    """Every live piece, or why each cannot be had."""
    from harness.probes.check import identify_gpus

    live, away = Live(), elsewhere(bundle_host)
    names = ("node_reading", "gpu_identity_now", "kernel_log_xids", "nvidia_smi_q", "nvidia_bug_report")
    if away is not None:
        for name in names:
            live.add(name, "", unavailable(away))
        return live
    say(f"reading the node (at most {timeouts.reading_s:g} s)")
    reading = read_within(timeouts.reading_s)
    live.add("node_reading", "live/reading.json", _json(reading))
    say("reading each GPU's serial, VBIOS and InfoROM")
    live.add("gpu_identity_now", "live/gpu-identity.json", _json_or_reason(identify_gpus()))
    live.add("kernel_log_xids", "live/kernel-log.json", _json_or_reason(kernel_window(reading, run_started_at)))
    say(f"nvidia-smi -q (at most {timeouts.smi_s:g} s)")
    live.add("nvidia_smi_q", "live/nvidia-smi-q.txt", run_tool(["nvidia-smi", "-q"], timeouts.smi_s, "the driver"))
    say(f"nvidia-bug-report.sh (at most {timeouts.bug_report_s:g} s)")
    live.add("nvidia_bug_report", "live/nvidia-bug-report.log.gz", bug_report(timeouts.bug_report_s))
    return live


def _json(document: Any) -> bytes:
    import json

    return (json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n").encode()


def _json_or_reason(document: Any) -> bytes | dict[str, Any]:
    """A document as a member, or, when the whole of it is unavailable, that reason as the piece's."""
    if isinstance(document, dict) and set(document) == {"unavailable"}:
        return document
    return _json(document)
