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
on several streams at once), `mark`, `seconds(start, end)`, `wait` and `done`.

`Bursts` times calls on a Clock as bursts with idle gaps between them (the roofline's GEMMs, its
launch floor and fusion chain): the first call alone, a warm-up by time, then windows, each burst
followed by idle `gap_ratio` times its length so a GPU's power limiter never engages; and the same
calls replayed from a CUDA graph (the kernels without the host's launch path). Its lengths and
their evidence are harness.analysis.timing's. Standard library only: torch is handed in by the
probe, never imported here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from harness.analysis import timing as rules

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


class Bursts:
    """Calls timed as bursts on one Clock, the device left idle GAP_RATIO times each burst (the rules:
    harness.analysis.timing). OBSERVE, when given, is read before and after each window (NVML's clock,
    power and clock-event reasons on a GPU) and recorded beside it."""

    def __init__(
        self, clock: Clock, gap_ratio: float, observe: Callable[[], dict[str, Any] | None] | None = None
    ) -> None:
        self.clock, self.gap_ratio, self.observe = clock, gap_ratio, observe
        self.idle_until = 0.0
        self.last_end = time.perf_counter()

    @classmethod
    def of(cls, torch: Any, device: str, observe: Callable[[], dict[str, Any] | None] | None = None) -> Bursts:
        """The burst timer for a probe's DEVICE: idle gaps on a GPU (its power limiter), none on a CPU."""
        return cls(Clock.of(torch, device), rules.GPU_GAP_RATIO if device == "cuda" else rules.CPU_GAP_RATIO, observe)

    # -- the clock of one burst ---------------------------------------------------------------
    def wait_idle(self) -> float:
        """Sleep out the gap the last burst asked for; the idle time since it ended (s)."""
        left = self.idle_until - time.perf_counter()
        if left > 0:
            time.sleep(left)
        return time.perf_counter() - self.last_end

    def burst_done(self, busy_s: float) -> None:
        """A burst that kept the device busy BUSY_S seconds just ended: idle GAP_RATIO times that."""
        self.last_end = time.perf_counter()
        self.idle_until = self.last_end + rules.gap_after(busy_s, self.gap_ratio)

    def observed(self) -> dict[str, Any] | None:
        return self.observe() if self.observe is not None else None

    def timed(self, run: Callable[[], None]) -> tuple[float, float]:
        """(seconds between the markers around RUN, host seconds from its first launch to completion); the
        gap after it follows the markers' time (a first call's host-side loading heats nothing)."""
        began = time.perf_counter()
        start = self.clock.mark()
        run()
        end = self.clock.mark()
        self.clock.wait(end)
        seconds = self.clock.seconds(start, end)
        self.burst_done(seconds)
        return seconds, self.last_end - began

    # -- a shape ---------------------------------------------------------------------------
    def first_call(self, call: Call) -> float:
        """The first call alone, synchronized (cuBLAS heuristics and lazy module loading land here)."""
        self.wait_idle()
        self.clock.synchronize()
        return self.timed(lambda: call(0))[1]

    def warm_up(self, call: Call, first: int) -> dict[str, Any]:
        """Calls until WARMUP_S of them and WARMUP_MIN_CALLS, in batches sized from the calls so far;
        the last batch's time per call sizes the windows."""
        self.wait_idle()
        began, calls, batch, each = time.perf_counter(), 0, 1, 0.0
        elapsed = 0.0
        while calls < rules.WARMUP_MIN_CALLS or elapsed < rules.WARMUP_S:
            before = elapsed
            for _ in range(batch):
                call(first + calls)
            calls += batch
            self.clock.synchronize()
            elapsed = time.perf_counter() - began
            each = (elapsed - before) / batch
            batch = (
                max(1, math.ceil((rules.WARMUP_S - elapsed) / max(each, 1e-9)))
                if elapsed < rules.WARMUP_S
                else max(1, rules.WARMUP_MIN_CALLS - calls)
            )
        self.burst_done(elapsed)
        return {"calls": calls, "seconds": elapsed, "per_call_s": each}

    def window(self, call: Call, first: int, count: int) -> dict[str, Any]:
        """COUNT calls back to back between one marker pair, after the idle gap (what OBSERVE saw around it)."""
        gap = self.wait_idle()
        before = self.observed()

        def run() -> None:
            for i in range(count):
                call(first + i)

        seconds, _ = self.timed(run)
        record: dict[str, Any] = {
            "calls": count,
            "seconds": seconds,
            "per_call_s": seconds / count,
            "gap_before_s": gap,
        }
        if before is not None:
            record.update(nvml_before=before, nvml_after=self.observed())
        return record

    def measure(self, call: Call) -> dict[str, Any]:
        """A shape's whole timing: first call, warm-up, WINDOWS windows (GAP_RATIO idle after each burst)."""
        first_s = self.first_call(call)
        warm = self.warm_up(call, 1)
        count = rules.calls_per_window(warm["per_call_s"])
        start = 1 + warm["calls"]
        windows = [self.window(call, start + w * count, count) for w in range(rules.WINDOWS)]
        return {"first_call_s": first_s, "warmup": warm, "windows": windows}

    # -- the kernels alone -----------------------------------------------------------------
    def graph(self, call: Call, first: int) -> dict[str, Any]:
        """The same calls captured in one CUDA graph and replayed: the kernels without the host's launch
        path. WINDOWS windows of replays, each about GRAPH_WINDOW_S (a GPU only)."""
        torch = self.clock.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # torch's rule: run the calls once on a side stream before capture
            call(first)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(rules.GRAPH_CALLS):
                call(first + i)
        self.wait_idle()
        self.timed(graph.replay)  # the first replay uploads the graph: untimed
        seconds, _ = self.timed(graph.replay)
        replays = max(1, math.ceil(rules.GRAPH_WINDOW_S / seconds))

        def run() -> None:
            for _ in range(replays):
                graph.replay()

        windows = []
        for _ in range(rules.WINDOWS):
            gap = self.wait_idle()
            seconds, _ = self.timed(run)
            calls = replays * rules.GRAPH_CALLS
            windows.append(
                {
                    "replays": replays,
                    "calls": calls,
                    "seconds": seconds,
                    "per_call_s": seconds / calls,
                    "gap_before_s": gap,
                }
            )
        return {"calls_per_replay": rules.GRAPH_CALLS, "windows": windows, "median_s": rules.per_call_s(windows)}

    def preheat(self, call: Call, label: str) -> dict[str, Any]:
        """PREHEAT_S of a medium GEMM in bursts of WINDOW_S (gaps as everywhere), so the sweep does not
        start from the idle clock; what OBSERVE saw before and after."""
        before = self.observed()
        first_s = self.first_call(call)
        warm = self.warm_up(call, 1)
        count = rules.calls_per_window(warm["per_call_s"])
        done, bursts, calls = warm["seconds"], 0, 1 + warm["calls"]
        while done < rules.PREHEAT_S:
            window = self.window(call, calls, count)
            done, bursts, calls = done + window["seconds"], bursts + 1, calls + count
        self.wait_idle()
        record: dict[str, Any] = {
            "shape": label,
            "calls": calls,
            "bursts": bursts + 1,
            "seconds": done,
            "first_call_s": first_s,
        }
        if before is not None:
            record.update(nvml_before=before, nvml_after=self.observed())
        return record
