"""How every probe times work: CUDA events on a GPU, time.perf_counter on a CPU.

On a GPU a marker is a CUDA event recorded on the stream the work is issued on (the current one
unless a stream is given), so the time is the GPU's own between the two markers, with no host
round trip per call; the host waits once, for the last marker, before reading the times. On a CPU
a marker is perf_counter() read after the call returned (the CPU work is synchronous).

Two ways to time calls, both used by the probes:

    clock.each(call, n)     one marker pair per call: n times in seconds (the median, the spread)
    clock.window(call, n)   one marker pair around n calls back to back: their total in seconds
                            (a timed window: the launch gaps between calls are inside it)

and, for a probe that interleaves its own work between markers (the stress loop, a copy issued
on several streams at once), `mark`, `seconds(start, end)`, `wait` and `done`. Standard library
only: torch is handed in by the probe, never imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Marker = Any  # a CUDA event on a GPU, a perf_counter() reading on a CPU
Call = Callable[[int], Any]  # called with the call's index (first, first + 1, ...)


class Clock:
    """Markers and elapsed times on one device: CUDA events when `cuda`, perf_counter otherwise.

    TORCH is the probe's torch module (needed only when `cuda`); STREAM the CUDA stream markers are
    recorded on (None: the current stream); DEVICE the CUDA device `synchronize` waits for (None:
    the current one)."""

    def __init__(self, torch: Any = None, cuda: bool = False, stream: Any = None, device: Any = None) -> None:
        self.torch, self.cuda, self.stream, self.device = torch, cuda, stream, device

    @classmethod
    def of(cls, torch: Any, device: str, **kwargs: Any) -> Clock:
        """The clock for a probe's DEVICE ("cuda" or "cpu")."""
        return cls(torch, device == "cuda", **kwargs)

    def mark(self) -> Marker:
        """Now: an event recorded on the stream (not yet reached by the GPU), or perf_counter()."""
        if not self.cuda:
            return time.perf_counter()
        event = self.torch.cuda.Event(enable_timing=True)
        if self.stream is not None:
            event.record(self.stream)
        else:
            event.record()
        return event

    def wait(self, marker: Marker) -> None:
        """Until the GPU has reached MARKER (nothing on a CPU)."""
        if self.cuda:
            marker.synchronize()

    def done(self, marker: Marker) -> bool:
        """Whether the GPU has reached MARKER, without waiting."""
        return marker.query() if self.cuda else True

    def seconds(self, start: Marker, end: Marker) -> float:
        """Seconds from START to END (on a GPU, once END has been reached: see `wait`)."""
        return start.elapsed_time(end) / 1e3 if self.cuda else end - start

    def milliseconds(self, start: Marker, end: Marker) -> float:
        """The same in milliseconds (CUDA events' own unit)."""
        return start.elapsed_time(end) if self.cuda else (end - start) * 1e3

    def synchronize(self) -> None:
        """Until every call issued so far has finished: the stream's, else the device's."""
        if not self.cuda:
            return
        if self.stream is not None:
            self.stream.synchronize()
        else:
            self.torch.cuda.synchronize(self.device)

    def issue_each(self, call: Call, count: int, first: int = 0) -> list[tuple[Marker, Marker]]:
        """Issue COUNT calls, each between its own pair of markers; read them with `collect`."""
        pairs = []
        for i in range(first, first + count):
            start = self.mark()
            call(i)
            pairs.append((start, self.mark()))
        return pairs

    def collect(self, pairs: list[tuple[Marker, Marker]]) -> list[float]:
        """Seconds of each issued call, once they have finished (`synchronize` first)."""
        return [self.seconds(start, end) for start, end in pairs]

    def each(self, call: Call, count: int, first: int = 0) -> list[float]:
        """Seconds of each of COUNT calls call(first), call(first + 1), ...: one marker pair per call,
        one wait at the end."""
        pairs = self.issue_each(call, count, first)
        self.synchronize()
        return self.collect(pairs)

    def window(self, call: Call, count: int, first: int = 0) -> float:
        """Seconds of COUNT calls issued back to back between one pair of markers (a timed window)."""
        start = self.mark()
        for i in range(first, first + count):
            call(i)
        end = self.mark()
        self.synchronize()
        return self.seconds(start, end)
