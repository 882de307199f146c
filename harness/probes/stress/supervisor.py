"""Starting and watching the stress probe's workers: one process per device, all at once.

Standard library only. Each worker (harness/probes/stress/worker.py) appends JSON-line events
to its own file; the supervisor reads them as they land (so the probe shows progress and keeps
every event a worker wrote before dying), passes each to `on_event`, and ends a worker that is
silent for `stall_s` (its Python stacks first dumped to its stderr) or still running at the
deadline. Workers are independent: one that fails does not stop the others, because the other
GPUs' results stand on their own. Workers stay in the probe's process group, so a runner that
kills the probe's group on its timeout takes them too, and each dies with the probe (PDEATHSIG).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.probes.collective.supervisor import STACK_WAIT_S, _tail, new_events, signal_name
from harness.probes.contract import log
from harness.probes.stress import warm

WORKER_MODULE = "harness.probes.stress.worker"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1


@dataclass
class WorkerRun:
    """One worker: its process, its events so far, and how it ended."""

    index: int
    proc: subprocess.Popen
    events_path: Path
    stderr_path: Path
    last_event_at: float
    offset: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    stopped: str | None = None  # why the supervisor ended it, if it did

    def ending(self) -> dict[str, Any]:
        """How the process ended: exit code or signal, the supervisor's reason, the stderr tail."""
        code = self.proc.returncode
        return {
            "exit_code": code if code is not None and code >= 0 else None,
            "signal": signal_name(-code) if code is not None and code < 0 else None,
            "stopped_by_probe": self.stopped,
            "stderr_tail": _tail(self.stderr_path),
        }


class StressSupervisor:
    def __init__(
        self,
        config: dict[str, Any],
        indices: list[int],
        workdir: Path,
        stall_s: float,
        deadline_s: float,
        on_event: Callable[[int, dict[str, Any]], None],
    ) -> None:
        self.config, self.indices, self.workdir = config, indices, workdir
        self.stall_s, self.deadline_s, self.on_event = stall_s, deadline_s, on_event
        self.workers: list[WorkerRun] = []

    def run(self) -> list[WorkerRun]:
        config_path = self.workdir / "stress-config.json"
        config_path.write_text(json.dumps(self.config, sort_keys=True))
        env = warm.worker_environment()
        try:
            for index in self.indices:
                self.workers.append(self._start(index, config_path, env))
            self._watch(time.monotonic() + self.deadline_s)
        finally:
            for worker in self.workers:
                if worker.proc.poll() is None:
                    worker.proc.kill()
                worker.proc.wait()
            self._read_events()
        return self.workers

    def _start(self, index: int, config_path: Path, env: dict[str, str]) -> WorkerRun:
        events = self.workdir / f"worker{index}.jsonl"
        ahead = warm.take([str(config_path), str(index), str(events)], env)
        if ahead is not None:  # started with the probe, ahead of its step: torch already imported
            log(f"stress: worker {index} was started ahead at {ahead[2]} (torch imported while the step before ran)")
            return WorkerRun(index, ahead[0], events, ahead[1], last_event_at=time.monotonic())
        stderr_path = self.workdir / f"worker{index}.stderr"
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, str(config_path), str(index), str(events)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
            )
        return WorkerRun(index, proc, events, stderr_path, last_event_at=time.monotonic())

    def _read_events(self) -> None:
        for worker in self.workers:
            for event in new_events(worker):
                worker.events.append(event)
                worker.last_event_at = time.monotonic()
                self.on_event(worker.index, event)

    def _watch(self, deadline: float) -> None:
        while True:
            self._read_events()
            running = [w for w in self.workers if w.proc.poll() is None]
            if not running:
                return
            now = time.monotonic()
            for worker in running:
                if now - worker.last_event_at > self.stall_s:
                    self._stop(worker, f"no event for {self.stall_s:g} s: ended by the probe")
                elif now > deadline:
                    self._stop(
                        worker, f"still running at the probe's {self.deadline_s:g} s deadline: ended by the probe"
                    )
            time.sleep(POLL_S)

    @staticmethod
    def _stop(worker: WorkerRun, why: str) -> None:
        try:
            worker.proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack on its stderr
            time.sleep(STACK_WAIT_S)
        except ProcessLookupError:
            pass
        worker.stopped = why
        worker.proc.kill()
        worker.proc.wait()
