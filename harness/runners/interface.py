"""What every runner takes and gives back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ProbeInvocation:
    """One probe to run: its name, its own arguments, and the limits of the run."""

    probe: str
    args: tuple[str, ...] = ()
    timeout_s: float = 600.0
    env: Mapping[str, str] = field(default_factory=dict)  # set on top of the runner's environment
    # Host paths the probe reads (a checkpoint file...): a container runner mounts each one
    # read-only at the same path; the local runner needs nothing.
    mounts: tuple[str, ...] = ()
    # The probe process's niceness (os.setpriority; 0: the runner's own), for a step run beside another's
    # measurement (harness.run.beside) so that it yields the CPU; where a runner cannot set it, it is 0.
    nice: int = 0


@dataclass(frozen=True)
class ProbeRun:
    """What happened when a probe ran: everything needed to reproduce or audit it."""

    probe: str
    argv: tuple[str, ...]
    env: Mapping[str, str]  # allowlisted, see harness.runners.environment
    runner: str
    image: str | None  # ref@sha256:... when containerized
    started_at: str
    finished_at: str
    exit_code: int | None  # None when killed on timeout
    timed_out: bool
    stdout: bytes
    stderr: bytes
    note: str | None = None  # e.g. why the container was stopped

    def stderr_tail(self, lines: int = 20) -> str:
        text = self.stderr.decode("utf-8", "replace")
        return "\n".join(line for line in text.splitlines()[-lines:])


LineCallback = Callable[[str], None]

# On Ctrl-C, SIGTERM or a timeout a runner asks the probe to stop (SIGTERM: the probe ends its
# workers and removes its temporary folders) and kills it only if it is still running this many
# seconds later (the longest clean-up measured: a stress probe ending its worker and deleting its
# folder on the CPU, well under a second; a GPU worker freeing device memory takes longer).
STOP_GRACE_S = 10.0


class Runner(Protocol):
    """Runs a probe process and records it. Never raises for a probe's own failure."""

    name: str

    def run(self, invocation: ProbeInvocation, on_stderr_line: LineCallback | None = None) -> ProbeRun: ...
