"""The roofline's timer: bursts of back-to-back calls timed in windows, with idle gaps between them.

Standard library, torch and nvidia-ml-py only. Why windows, why gaps and how long each is:
harness.analysis.gemm_timing (the rules and the H200 measurements they come from). On CUDA a window
is one pair of CUDA events around N calls, read after one synchronize; on the CPU
time.perf_counter around N synchronous calls. Around each GPU window NVML's SM clock, power and
clock-event reasons are read (NVML refreshes them about every 100 ms on the H200: a reading may be
older than the window beside it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from harness.analysis import gemm_timing as rules
from harness.analysis.clock_events import decode_clock_event_reasons
from harness.probes._health_devices import watts
from harness.probes._stress_nvml import _field as field_value
from harness.probes.contract import attempt, describe_exception, unavailable

NVML_FI_DEV_POWER_INSTANT = 186  # nvml.h: instantaneous board power (mW); nvmlDeviceGetPowerUsage is a 1 s average here
NVML_REFRESH = ("NVML refreshes the SM clock, power and clock-event reasons about every 100 ms on the H200 "
                "(driver 580.159.04: values repeat for ~4 reads 26 ms apart), so a reading beside a ~20 ms "
                "window may be up to 100 ms old")


class NvmlReader:
    """What NVML says around a window: SM clock, power (1 s average and instant), clock-event reasons."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.pynvml, self.handle = pynvml, handle

    def read(self) -> dict[str, Any] | None:
        if self.handle is None:
            return None
        p, h = self.pynvml, self.handle
        mask = attempt(p.nvmlDeviceGetCurrentClocksEventReasons, h)
        return {"sm_clock_mhz": attempt(p.nvmlDeviceGetClockInfo, h, p.NVML_CLOCK_SM),
                "power_w": watts(attempt(p.nvmlDeviceGetPowerUsage, h)),
                "power_instant_w": self.instant_power(),
                "clock_event_reasons": decode_clock_event_reasons(mask) if isinstance(mask, int) else mask}

    def instant_power(self) -> Any:
        try:
            value = field_value(self.pynvml, self.pynvml.nvmlDeviceGetFieldValues(
                self.handle, [NVML_FI_DEV_POWER_INSTANT])[0])
        except Exception as exc:  # noqa: BLE001 - a driver without the field says so
            return unavailable(describe_exception(exc))
        return round(value / 1000.0, 3) if isinstance(value, (int, float)) else value


class Timer:
    """Times calls in windows on one device, leaving the device idle GAP_RATIO times each burst."""

    def __init__(self, device: str, reader: NvmlReader | None) -> None:
        self.device, self.reader = device, reader
        self.gap_ratio = rules.GPU_GAP_RATIO if device == "cuda" else rules.CPU_GAP_RATIO
        self.idle_until = 0.0
        self.last_end = time.perf_counter()

    # -- the clock of one burst ---------------------------------------------------------------
    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

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

    def nvml(self) -> dict[str, Any] | None:
        return self.reader.read() if self.reader is not None else None

    def timed(self, run: Callable[[], None]) -> tuple[float, float]:
        """(seconds between the events around RUN, host seconds from its first launch to completion); the
        gap after it follows the events' time (a first call's host-side loading heats nothing)."""
        began = time.perf_counter()
        if self.device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            run()
            seconds = time.perf_counter() - began
        self.burst_done(seconds)
        return seconds, self.last_end - began

    # -- a shape ---------------------------------------------------------------------------
    def first_call(self, call: Callable[[int], Any]) -> float:
        """The first call alone, synchronized (cuBLAS heuristics and lazy module loading land here)."""
        self.wait_idle()
        self.sync()
        return self.timed(lambda: call(0))[1]

    def warm_up(self, call: Callable[[int], Any], first: int) -> dict[str, Any]:
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
            self.sync()
            elapsed = time.perf_counter() - began
            each = (elapsed - before) / batch
            batch = (max(1, math.ceil((rules.WARMUP_S - elapsed) / max(each, 1e-9))) if elapsed < rules.WARMUP_S
                     else max(1, rules.WARMUP_MIN_CALLS - calls))
        self.burst_done(elapsed)
        return {"calls": calls, "seconds": elapsed, "per_call_s": each}

    def window(self, call: Callable[[int], Any], first: int, count: int) -> dict[str, Any]:
        gap = self.wait_idle()
        before = self.nvml()

        def run() -> None:
            for i in range(count):
                call(first + i)
        seconds, _ = self.timed(run)
        record: dict[str, Any] = {"calls": count, "seconds": seconds, "per_call_s": seconds / count, "gap_before_s": gap}
        if before is not None:
            record.update(nvml_before=before, nvml_after=self.nvml())
        return record

    def measure(self, call: Callable[[int], Any]) -> dict[str, Any]:
        """A shape's whole timing: first call, warm-up, windows (GAP_RATIO idle after each burst)."""
        first_s = self.first_call(call)
        warm = self.warm_up(call, 1)
        count = rules.calls_per_window(warm["per_call_s"])
        start = 1 + warm["calls"]
        windows = []
        for w in range(rules.WINDOWS):
            windows.append(self.window(call, start + w * count, count))
        return {"first_call_s": first_s, "warmup": warm, "windows": windows}

    # -- the kernels alone -----------------------------------------------------------------
    def graph(self, call: Callable[[int], Any], first: int) -> dict[str, Any]:
        """The same calls captured in one CUDA graph and replayed: the kernels without the host's launch
        path. WINDOWS windows of replays, each about GRAPH_WINDOW_S."""
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
            windows.append({"replays": replays, "calls": calls, "seconds": seconds, "per_call_s": seconds / calls,
                            "gap_before_s": gap})
        return {"calls_per_replay": rules.GRAPH_CALLS, "windows": windows, "median_s": rules.per_call_s(windows)}

    def preheat(self, call: Callable[[int], Any], label: str) -> dict[str, Any]:
        """PREHEAT_S of a medium GEMM in bursts of WINDOW_S (gaps as everywhere), so the sweep does not
        start from the idle clock; NVML before and after."""
        before = self.nvml()
        first_s = self.first_call(call)
        warm = self.warm_up(call, 1)
        count = rules.calls_per_window(warm["per_call_s"])
        done, bursts, calls = warm["seconds"], 0, 1 + warm["calls"]
        while done < rules.PREHEAT_S:
            window = self.window(call, calls, count)
            done, bursts, calls = done + window["seconds"], bursts + 1, calls + count
        self.wait_idle()
        record: dict[str, Any] = {"shape": label, "calls": calls, "bursts": bursts + 1, "seconds": done,
                                  "first_call_s": first_s}
        if before is not None:
            record.update(nvml_before=before, nvml_after=self.nvml())
        return record


def launch_floor(timer: Timer, device: str) -> dict[str, Any]:
    """An (almost) empty kernel timed exactly as the GEMMs are: the launch floor per call."""
    tiny = torch.ones(1, device=device)
    record = timer.measure(lambda i: tiny.add_(1))
    return {"windows": [{k: w[k] for k in ("calls", "seconds", "per_call_s", "gap_before_s")} for w in record["windows"]],
            "median_s": rules.per_call_s(record["windows"])}
