"""Starting, watching and stopping the worker processes of one all-reduce curve.

Standard library only. The workers (harness/probes/collective/worker.py) run in one process
group of their own, write JSON-line events to per-rank files, and die with this process
(PR_SET_PDEATHSIG). The supervisor:
- keeps every point rank 0 reported, whatever happens afterwards;
- notices a worker that exits early (a crash, a signal, a wrong result), names it (rank, exit
  code or signal, the size it was measuring, its stderr tail) and kills the others at once;
- kills the whole group when nothing progresses for `size_timeout_s` (`init_timeout_s` until
  every local worker has joined the collective), so a hung collective cannot hang the probe.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.probes.lifetime import parent_env

WORKER_MODULE = "harness.probes.collective.worker"
POLL_S = 0.05
STACK_WAIT_S = 0.5
STDERR_TAIL_LINES = 25


def new_events(worker: Any) -> list[dict[str, Any]]:
    """The events a worker appended to its JSON-lines file (worker.events_path) since the last read,
    complete lines only; worker.offset moves past them. The one event reader of both supervisors."""
    try:
        with open(worker.events_path, "rb") as fh:
            fh.seek(worker.offset)
            data = fh.read()
    except FileNotFoundError:
        return []
    complete = data[: data.rfind(b"\n") + 1]
    worker.offset += len(complete)
    return [json.loads(line) for line in complete.decode("utf-8", "replace").splitlines() if line.strip()]


@dataclass(frozen=True)
class Launch:
    """One local worker: its global rank and its complete environment."""

    rank: int
    env: dict[str, str]


@dataclass
class Supervised:
    """What one curve's workers produced: rank 0's points (when rank 0 is local), a failure or None,
    and rank 0's ready event (device name, torch version)."""

    points: list[dict[str, Any]] = field(default_factory=list)
    failure: dict[str, Any] | None = None
    ready: dict[str, Any] | None = None


@dataclass
class _Worker:
    launch: Launch
    proc: subprocess.Popen
    events_path: Path
    stderr_path: Path
    offset: int = 0
    ready: bool = False
    last_size: int | None = None
    error: dict[str, Any] | None = None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(stderr not readable: {exc})"
    return "\n".join(text.splitlines()[-lines:])


class Supervisor:
    """Runs one curve: `Supervisor(config, launches, workdir, ...).run()`."""

    def __init__(
        self,
        config: dict[str, Any],
        launches: list[Launch],
        workdir: Path,
        size_timeout_s: float,
        init_timeout_s: float,
        on_point: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.config, self.launches, self.workdir = config, launches, workdir
        self.size_timeout_s, self.init_timeout_s = size_timeout_s, init_timeout_s
        self.on_point = on_point
        self.workers: list[_Worker] = []
        self.result = Supervised()

    # -- lifecycle ------------------------------------------------------------------------

    def run(self) -> Supervised:
        config_path = self.workdir / "worker-config.json"
        config_path.write_text(json.dumps(self.config, sort_keys=True))
        try:
            self._start(config_path)
        except (OSError, subprocess.SubprocessError) as exc:
            self._kill_all()
            self.result.failure = {
                "kind": "launch_failed",
                "rank": None,
                "exit_code": None,
                "signal": None,
                "at_bytes": None,
                "message": f"could not start a worker: {exc}",
                "stderr_tail": "",
            }
            return self.result
        try:
            self._watch()
        finally:
            self._kill_all()
        return self.result

    def _start(self, config_path: Path) -> None:
        group: int | None = None
        for launch in self.launches:
            events = self.workdir / f"rank{launch.rank}.jsonl"
            stderr_path = self.workdir / f"rank{launch.rank}.stderr"
            # The child holds its own copies of both files; ours close once it has started.
            with open(self.workdir / f"rank{launch.rank}.stdout", "wb") as stdout, open(stderr_path, "wb") as stderr:
                proc = subprocess.Popen(
                    [sys.executable, "-m", WORKER_MODULE, str(config_path)],
                    env={**launch.env, **parent_env()},  # the worker checks its parent is still this process
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    process_group=0 if group is None else group,
                )
            group = proc.pid if group is None else group
            self.workers.append(_Worker(launch, proc, events, stderr_path))

    def _kill_all(self) -> None:
        groups = set()
        for worker in self.workers:
            if worker.proc.poll() is None:
                try:
                    groups.add(os.getpgid(worker.proc.pid))
                except ProcessLookupError:
                    pass
        for group in groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for worker in self.workers:
            if worker.proc.poll() is None:
                worker.proc.kill()
            worker.proc.wait()

    # -- watching -------------------------------------------------------------------------

    def _read_events(self) -> bool:
        """Consume new complete event lines; True when any arrived."""
        progressed = False
        for worker in self.workers:
            for event in new_events(worker):
                self._handle(worker, event)
                progressed = True
        return progressed

    def _handle(self, worker: _Worker, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "ready":
            worker.ready = True
            if worker.launch.rank == 0:
                self.result.ready = event
        elif kind == "size_started":
            worker.last_size = event["bytes"]
        elif kind == "point" and worker.launch.rank == 0:
            point = {k: v for k, v in event.items() if k not in ("event", "at")}
            self.result.points.append(point)
            if self.on_point is not None:
                self.on_point(point)
        elif kind == "error":
            worker.error = event

    def _watch(self) -> None:
        last_progress = time.monotonic()
        while True:
            if self._read_events():
                last_progress = time.monotonic()
            codes = {id(w): w.proc.poll() for w in self.workers}
            failed = [w for w in self.workers if codes[id(w)] not in (None, 0)]
            if failed:
                time.sleep(POLL_S)  # let a dying peer's last event and exit status land
                self._read_events()
                failed = [w for w in self.workers if w.proc.poll() not in (None, 0)]
                self.result.failure = self._death(self._culprit(failed))
                return
            if all(code == 0 for code in codes.values()):
                self._read_events()
                return
            joined = all(w.ready for w in self.workers)
            limit = self.size_timeout_s if joined else self.init_timeout_s
            if time.monotonic() - last_progress > limit:
                self._read_events()
                self._dump_stacks()
                self.result.failure = self._timeout(limit, joined)
                return
            time.sleep(POLL_S)

    def _dump_stacks(self) -> None:
        """SIGUSR1 makes each live worker print every thread's Python stack on its stderr (faulthandler)."""
        for worker in self.workers:
            if worker.proc.poll() is None:
                try:
                    worker.proc.send_signal(signal.SIGUSR1)
                except ProcessLookupError:
                    pass
        time.sleep(STACK_WAIT_S)

    @staticmethod
    def _culprit(failed: list[_Worker]) -> _Worker:
        """The worker that failed first in cause: killed by a signal (other than SIGABRT), else a wrong
        result, else aborted, else lowest rank.

        A rank's death makes its peers fail soon after (connection reset, aborted communicator);
        those secondary failures are not the cause.
        """

        def order(worker: _Worker) -> tuple[int, int]:
            code = worker.proc.returncode
            if code < 0 and -code != signal.SIGABRT:
                return (0, worker.launch.rank)
            if worker.error and worker.error.get("kind") == "wrong_result":
                return (1, worker.launch.rank)
            if code < 0:  # abort(): how gloo and NCCL react to a peer's lost connection
                return (2, worker.launch.rank)
            return (3, worker.launch.rank)

        return min(failed, key=order)

    def _where(self, worker: _Worker) -> str:
        if not worker.ready:
            return "before joining the collective"
        if worker.last_size is None:
            return "after joining, before the first size"
        return f"during the {worker.last_size}-byte all-reduce"

    def _death(self, worker: _Worker) -> dict[str, Any]:
        code = worker.proc.returncode
        rank = worker.launch.rank
        if code < 0:
            kind, how = "rank_killed", f"was killed by {signal_name(-code)}"
        elif worker.error and worker.error.get("kind") == "wrong_result":
            kind, how = "wrong_result", f"exited with code {code} (wrong result)"
        else:
            kind, how = "rank_exited", f"exited with code {code}"
        message = f"rank {rank} {how} {self._where(worker)}"
        if worker.error:
            message += f": {worker.error.get('message')}"
        return {
            "kind": kind,
            "rank": rank,
            "exit_code": code if code >= 0 else None,
            "signal": signal_name(-code) if code < 0 else None,
            "at_bytes": worker.last_size,
            "message": message,
            "stderr_tail": _tail(worker.stderr_path),
            "ranks": self._ranks(),
        }

    def _ranks(self) -> dict[str, Any]:
        """Every local rank's state at the failure: status, last size started, stderr tail."""
        return {
            str(w.launch.rank): {
                "status": self._status(w),
                "last_bytes_started": w.last_size,
                "stderr_tail": _tail(w.stderr_path, 12),
            }
            for w in self.workers
        }

    @staticmethod
    def _status(worker: _Worker) -> str:
        code = worker.proc.poll()
        if code is None:
            return "still running; killed by the supervisor"
        if code < 0:
            return f"killed by {signal_name(-code)}"
        return f"exited with code {code}"

    def _timeout(self, limit: float, joined: bool) -> dict[str, Any]:
        running = [w for w in self.workers if w.proc.poll() is None]
        stage = "after every rank joined" if joined else "while ranks were joining the collective"
        sizes = ", ".join(
            f"rank {w.launch.rank} at {w.last_size if w.last_size is not None else 'no size yet'}" for w in self.workers
        )
        progress = sorted(w.last_size if w.last_size is not None else -1 for w in self.workers)
        slowest = min(self.workers, key=lambda w: (w.last_size if w.last_size is not None else -1, w.launch.rank))
        lagging = len(progress) < 2 or progress[0] < progress[1]  # one rank behind the others: name it
        message = (
            f"timeout: no progress for {limit:g} s {stage} (last size started: {sizes}); "
            f"ranks {', '.join(str(w.launch.rank) for w in running) or 'none'} still running were killed"
        )
        return {
            "kind": "timeout",
            "rank": slowest.launch.rank if joined and lagging else None,
            "exit_code": None,
            "signal": None,
            "at_bytes": slowest.last_size,
            "message": message,
            "stderr_tail": _tail(slowest.stderr_path),
            "ranks": self._ranks(),
        }
