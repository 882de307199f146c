"""A small pool of worker processes that survives its workers: one task per worker at a time.

`multiprocessing.Pool` hangs on a task whose worker the OS killed, and `ProcessPoolExecutor`
breaks for every task; here each worker has its own pipe and the parent always knows which task
a worker holds, so a worker that dies (a signal, the out-of-memory killer, a crash in a C
extension) or overruns its time is named with its task, replaced, and the other tasks go on.
An exception in the task function is caught in the worker and reported for that task alone.

Workers are forked from a forkserver (a clean single-threaded process), so the parent's own
threads (the progress display's refresh) are never copied into them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

POLL_S = 1.0


@dataclass(frozen=True)
class Done:
    """One task's outcome: its result, or why there is none (`error`)."""

    task: Any
    result: Any = None
    error: str | None = None


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _serve(connection: Connection, function: Callable[[Any], Any]) -> None:
    """A worker's loop: a task in, ("ok", result) or ("error", why) out, until None arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    connection.send(("ready", None))  # started and FUNCTION importable: a task's clock starts now
    while True:
        try:
            task = connection.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            reply = ("ok", function(task))
        except BaseException as exc:  # noqa: BLE001 - reported for this task, the worker goes on
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            at = f" at {os.path.basename(where.filename)}:{where.lineno}" if where else ""
            reply = ("error", f"{type(exc).__name__}: {str(exc)[:300]}{at}")
        connection.send(reply)


def death(exitcode: int | None) -> str:
    """How a worker ended, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the out-of-memory killer sends it)" if -exitcode == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {exitcode}"


class _Worker:
    def __init__(self, context: Any, function: Callable[[Any], Any]) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, function), daemon=True)
        self.process.start()
        child.close()
        self.task: Any = None
        self.since = 0.0
        self.ready = False

    def give(self, task: Any) -> None:
        self.task, self.since = task, time.monotonic()
        self.connection.send(task)

    def stop(self) -> None:
        try:
            self.connection.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()


def run(
    tasks: Iterable[Any], function: Callable[[Any], Any], workers: int, timeout_s: float, preload: tuple[str, ...] = ()
) -> Iterator[Done]:
    """Run FUNCTION (importable by name: it crosses to the workers) on every task, WORKERS at a time,
    yielding each Done as it finishes (in no particular order). A task running over TIMEOUT_S (from
    when its worker took it) has its worker killed; a worker that dies is replaced. Tasks are read
    from TASKS as workers free up."""
    context = multiprocessing.get_context("forkserver")
    if preload:
        context.set_forkserver_preload(list(preload))
    pending = iter(tasks)
    pool = [_Worker(context, function) for _ in range(max(1, workers))]
    left = True
    try:
        while left or any(w.task is not None for w in pool):
            watched = [w for w in pool if w.task is not None or not w.ready]
            ready = wait([*(w.connection for w in watched), *(w.process.sentinel for w in watched)], timeout=POLL_S)
            for worker in watched:
                if not worker.ready:
                    if not _started(worker, ready):
                        continue
                    done = None
                else:
                    done = _collect(worker, ready, timeout_s)
                    if done is None:
                        continue
                    worker.task = None
                if done is not None and (not worker.process.is_alive() or worker.connection.closed):
                    pool[pool.index(worker)] = worker = _Worker(context, function)
                elif left:
                    left = _hand_out(worker, pending)
                if done is not None:
                    yield done
            if not left and all(w.task is None for w in pool):
                break
    finally:
        for worker in pool:
            if worker.task is not None and worker.process.is_alive():
                worker.kill()
            elif not worker.connection.closed:
                worker.stop()


def _started(worker: _Worker, ready: list[Any]) -> bool:
    """Whether a new worker has said it is ready (a worker that dies before that is a bug here)."""
    if worker.connection in ready or worker.connection.poll():
        kind, _ = worker.connection.recv()
        worker.ready = kind == "ready"
        return worker.ready
    if worker.process.sentinel in ready:
        raise RuntimeError(f"a fleet worker process {death(worker.process.exitcode)} before it was ready")
    return False


def _hand_out(worker: _Worker, pending: Iterator[Any]) -> bool:
    """Give WORKER the next task; False once there is none left."""
    task = next(pending, None)
    if task is None:
        return False
    worker.give(task)
    return True


def _collect(worker: _Worker, ready: list[Any], timeout_s: float) -> Done | None:
    """The worker's Done if it has finished, died or overrun; None while it is still at work."""
    if worker.connection in ready or worker.connection.poll():
        try:
            kind, value = worker.connection.recv()
        except (EOFError, OSError):
            worker.process.join(timeout=5)
            return Done(worker.task, error=f"the worker process checking it {death(worker.process.exitcode)}")
        return Done(worker.task, result=value) if kind == "ok" else Done(worker.task, error=value)
    if worker.process.sentinel in ready or not worker.process.is_alive():
        worker.process.join(timeout=5)
        worker.connection.close()
        return Done(worker.task, error=f"the worker process checking it {death(worker.process.exitcode)}")
    if time.monotonic() - worker.since > timeout_s:
        worker.kill()
        return Done(worker.task, error=f"checking it took over {timeout_s:g} s: its worker process was stopped")
    return None
