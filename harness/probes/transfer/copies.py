"""Timing copies one at a time: alone, or several streams at once.

A `Stream` is one copy kind issued on one stream: `copy(nbytes)` issues one copy of the first
`nbytes` of its buffers on the current stream. On a GPU each copy is bracketed by its own pair
of CUDA events on that stream (nvbandwidth also times copy engine copies with CUDA events; it
times 16 copies between one pair, this probe keeps every copy's own time); on the CPU by
perf_counter. Every per-copy time is kept raw.

Concurrency: one host thread per stream (torch and ctypes release the GIL inside the copy
call, so a pageable copy, which the driver performs synchronously, blocks only its own
thread). All threads wait at one barrier after their warm-up, then issue their copies; each
stream's span is measured on the GPU's clock. Streams on one GPU share a clock (an origin
event recorded before the barrier), so their overlap is measured; streams on different GPUs
do not, so each span is measured on its own GPU and the host time to issue every copy is kept
beside it.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.probes.timing import Clock

WARMUP_COPIES = 2
MIN_COPIES, MAX_COPIES = 5, 200


@dataclass
class Stream:
    """One copy kind on one stream (stream None: a host copy timed with perf_counter)."""

    series_id: str
    copy: Callable[[int], Any]
    device: int | None = None
    stream: Any = None
    also_current: list[Any] = field(default_factory=list)  # other devices' streams to make current


def copies_for(budget_s: float, estimate_s: float) -> int:
    """Timed copies for a point: about `budget_s` of copying, within [MIN_COPIES, MAX_COPIES]."""
    return max(MIN_COPIES, min(MAX_COPIES, math.ceil(budget_s / max(estimate_s, 1e-9))))


class Timer:
    """Issues and times copies of one Stream on its clock (harness.probes.timing: CUDA events on the
    member's stream, perf_counter for a host copy); torch is passed in (never imported here)."""

    def __init__(self, torch: Any, member: Stream) -> None:
        self.torch, self.member = torch, member
        self.clock = Clock(torch, cuda=member.stream is not None, stream=member.stream)

    def _current(self) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if self.member.stream is not None:
            stack.enter_context(self.torch.cuda.device(self.member.device))
            for stream in [self.member.stream, *self.member.also_current]:
                stack.enter_context(self.torch.cuda.stream(stream))
        return stack

    def issue(self, nbytes: int, count: int) -> list[Any]:
        """Issue `count` copies, each between its own pair of markers."""
        with self._current():
            return self.clock.issue_each(lambda _index: self.member.copy(nbytes), count)

    def collect(self, issued: list[Any], origin: Any = None) -> tuple[list[float], list[float]]:
        """(per-copy seconds, [first start, last end] in seconds from `origin` or the first start)."""
        self.clock.synchronize()
        times = self.clock.collect(issued)
        if not self.clock.cuda:
            return times, [0.0, sum(times)]
        first, last = issued[0][0], issued[-1][1]
        if origin is None:
            return times, [0.0, self.clock.seconds(first, last)]
        return times, [self.clock.seconds(origin, first), self.clock.seconds(origin, last)]

    def run(self, nbytes: int, count: int) -> list[float]:
        return self.collect(self.issue(nbytes, count))[0]


def point(nbytes: int, times: list[float]) -> dict[str, Any]:
    return {"bytes": nbytes, "copies": len(times), "warmup_copies": WARMUP_COPIES, "copy_times_s": times}


def sweep_alone(torch: Any, member: Stream, sizes: list[int], budget_s: float) -> list[dict[str, Any]]:
    """One point per size: warm up, size the count to the budget, time each copy."""
    timer = Timer(torch, member)
    points = []
    for nbytes in sizes:
        estimate = statistics.median(timer.run(nbytes, WARMUP_COPIES))
        points.append(point(nbytes, timer.run(nbytes, copies_for(budget_s, estimate))))
    return points


def _together(torch: Any, members: list[Stream], nbytes: int, count: int, same_clock: bool) -> dict[str, Any]:
    """Every member issues `count` copies from its own thread after one barrier."""
    timers = [Timer(torch, m) for m in members]
    origin = None
    if same_clock:
        with torch.cuda.device(members[0].device):
            origin = timers[0].clock.mark()
            timers[0].clock.synchronize()
    barrier = threading.Barrier(len(members) + 1)
    results: list[Any] = [None] * len(members)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            barrier.wait()
            issued = timers[i].issue(nbytes, count)
            issued_at = time.perf_counter()
            results[i] = (*timers[i].collect(issued, origin), issued_at)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread below
            errors.append(exc)
            barrier.abort()  # nobody waits forever for a thread that failed

    threads = [threading.Thread(target=work, args=(i,), name=f"transfer-{m.series_id}") for i, m in enumerate(members)]
    for thread in threads:
        thread.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    released = time.perf_counter()
    for thread in threads:
        thread.join()
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]
    return {
        "times": {m.series_id: r[0] for m, r in zip(members, results, strict=True)},
        "spans": {m.series_id: r[1] for m, r in zip(members, results, strict=True)},
        "issue_s": max(r[2] for r in results) - released,
    }


def sweep_together(
    torch: Any, members: list[Stream], sizes: list[int], budget_s: float, same_clock: bool
) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Each size: all members at once (warm-up together, then timed together).

    Returns (points per series id, per-size group entries {bytes, issue_s, member_spans_s}).
    """
    points: dict[str, list[dict[str, Any]]] = {m.series_id: [] for m in members}
    entries = []
    for nbytes in sizes:
        warm = _together(torch, members, nbytes, WARMUP_COPIES, same_clock)
        estimate = max(statistics.median(t) for t in warm["times"].values())
        timed = _together(torch, members, nbytes, copies_for(budget_s, estimate), same_clock)
        for member in members:
            points[member.series_id].append(point(nbytes, timed["times"][member.series_id]))
        entries.append({"bytes": nbytes, "issue_s": timed["issue_s"], "member_spans_s": timed["spans"]})
    return points, entries
