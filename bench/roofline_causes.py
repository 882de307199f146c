"""Why do the roofline's GEMM figures move between identical runs? (issue 30, item 1)

Times the same GEMM shapes, with the probe's own operands (rotated input sets, never zeros), by
several timing methods, each over three passes through the shape list, and records the GPU's SM
clock and power before and after every timed window. Then two state experiments: how fast the
clock ramps from idle, and after how long a heavy GEMM engages the power cap (and how long the
card takes to recover once idle). One JSON document on stdout; a table on stderr.

Methods:
  per-call   the probe before issue 30: 5 warm-up calls, one CUDA-event pair per call, calls until
             0.2 s (10..100), median of the per-call times
  windows    warm-up by time (>= 25 ms of calls), then 3 windows of ~25 ms, one event pair around
             each window's calls, 50 ms idle between windows; median of the window means
  long-win   as windows, but 3 windows of ~100 ms and no idle gap
  graph      (shapes under 100 us a call) the calls of one window captured in a CUDA graph and
             replayed: the kernels alone, no CPU launch cost

    python3 bench/roofline_causes.py [--passes 3] > causes.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from harness.probes.roofline import gemms as side

SHAPES = {  # label: (dtype, m, n, k); the movers and steady ones
    "square-256": ("bf16", 256, 256, 256),
    "square-1024": ("bf16", 1024, 1024, 1024),
    "square-2048": ("bf16", 2048, 2048, 2048),
    "qkv-decode-64": ("bf16", 64, 6144, 4096),
    "square-8192": ("bf16", 8192, 8192, 8192),
    "down-prefill-2048": ("bf16", 2048, 4096, 14336),
    "gate_up-prefill-8192": ("bf16", 8192, 28672, 4096),
    "tf32-4096x4096x8192": ("tf32", 4096, 4096, 8192),
    "fp16-4096x8192x8192": ("fp16", 4096, 8192, 8192),
}
L2_BYTES = 60 * 2**20


class Nvml:
    """Light NVML reads: SM clock, power (instant where the driver has it), clock-event reasons."""

    def __init__(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.p, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as exc:  # noqa: BLE001 - a bench: no NVML, no clocks
            self.p, self.h, self.why = None, None, repr(exc)

    def read(self) -> dict[str, Any]:
        if self.p is None:
            return {"unavailable": self.why}
        p, h = self.p, self.h
        out: dict[str, Any] = {"t": time.monotonic()}
        try:
            out["sm_mhz"] = p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_SM)
            out["power_w"] = p.nvmlDeviceGetPowerUsage(h) / 1000
            out["reasons"] = p.nvmlDeviceGetCurrentClocksEventReasons(h)
            fields = p.nvmlDeviceGetFieldValues(h, [p.NVML_FI_DEV_POWER_INSTANT])
            if fields[0].nvmlReturn == 0:
                out["power_instant_w"] = fields[0].value.uiVal / 1000
        except Exception as exc:  # noqa: BLE001 - a bench: a failed read is kept as the sample's error
            out["error"] = repr(exc)
        return out


class Sampler(threading.Thread):
    def __init__(self, nvml: Nvml, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.nvml, self.interval_s, self.samples, self.stop = nvml, interval_s, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append(self.nvml.read())
            self.stop.wait(self.interval_s)


def shape_call(label: str, pool: dict[str, side.OperandPool]):
    dtype, m, n, k = SHAPES[label]
    side.set_matmul_precision(dtype)
    if dtype not in pool:
        pool[dtype] = side.OperandPool(dtype, "cuda", L2_BYTES, 2**30)
    operands, rotation = pool[dtype].sets(m, n, k)
    return side.gemm_call(dtype, "cuda", operands, m, n), 2 * m * n * k, rotation


def window_times(call, count: int, windows: int, gap_s: float, nvml: Nvml, first: int) -> list[dict[str, Any]]:
    out = []
    for w in range(windows):
        if gap_s and w:
            time.sleep(gap_s)
        before = nvml.read()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(count):
            call(first + w * count + i)
        end.record()
        end.synchronize()
        out.append(
            {
                "calls": count,
                "s_per_call": start.elapsed_time(end) / 1e3 / count,
                "before": before,
                "after": nvml.read(),
            }
        )
    return out


def time_each(call, count: int, first: int = 0) -> list[float]:
    """The probe's timer before issue 30: one pair of CUDA events around each call."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    for i in range(count):
        starts[i].record()
        call(first + i)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)]


def per_call_timed(
    call, warmup: int = 5, min_iterations: int = 10, max_iterations: int = 100, target_s: float = 0.2
) -> list[float]:
    """The probe's method before issue 30: warm-up calls, then calls until TARGET_S (10..100), each timed alone."""
    warm = time_each(call, warmup)
    estimate = statistics.median(warm[1:] or warm)
    count = max(min_iterations, min(max_iterations, math.ceil(target_s / max(estimate, 1e-9))))
    return time_each(call, count, first=warmup)


def per_call(call, nvml: Nvml) -> dict[str, Any]:
    before = nvml.read()
    times = per_call_timed(call)
    return {
        "s": statistics.median(times),
        "iterations": len(times),
        "before": before,
        "after": nvml.read(),
        "spread": (max(times) - min(times)) / statistics.median(times),
    }


def windowed(call, nvml: Nvml, window_s: float, windows: int, gap_s: float) -> dict[str, Any]:
    # warm-up by time: at least 25 ms of calls (and 3 calls), sizing the window from its speed
    begin, calls = time.perf_counter(), 0
    while calls < 3 or time.perf_counter() - begin < 0.025:
        call(calls)
        calls += 1
        if calls % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    est = (time.perf_counter() - begin) / calls
    count = max(2, min(20000, math.ceil(window_s / est)))
    ws = window_times(call, count, windows, gap_s, nvml, calls)
    means = [w["s_per_call"] for w in ws]
    return {
        "s": statistics.median(means),
        "windows": ws,
        "warmup_calls": calls,
        "spread": (max(means) - min(means)) / statistics.median(means),
    }


def graphed(call, nvml: Nvml, windows: int = 3) -> dict[str, Any]:
    for i in range(3):
        call(i)
    torch.cuda.synchronize()
    count = 50
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call(0)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(count):
            call(i)
    graph.replay()
    torch.cuda.synchronize()
    means = []
    for _ in range(windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        means.append(start.elapsed_time(end) / 1e3 / count)
    return {"s": statistics.median(means), "spread": (max(means) - min(means)) / statistics.median(means)}


def ramp_from_idle(nvml: Nvml, pool) -> dict[str, Any]:
    """1 s idle, then square-2048 calls back to back: per-call times and the clock over 300 ms."""
    call, flops, _ = shape_call("square-2048", pool)
    torch.cuda.synchronize()
    time.sleep(1.0)
    sampler = Sampler(nvml, 0.002)
    sampler.start()
    t0 = time.monotonic()
    events = []
    for i in range(400):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        call(i)
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    time.sleep(0.05)
    sampler.stop.set()
    sampler.join()
    tf = [flops / (s.elapsed_time(e) / 1e3) / 1e12 for s, e in events]
    return {
        "tflops_per_call": [round(x, 1) for x in tf],
        "clock": [(round(x["t"] - t0, 4), x.get("sm_mhz"), x.get("power_instant_w")) for x in sampler.samples],
    }


def cap_onset(nvml: Nvml, pool, label: str = "gate_up-prefill-8192", seconds: float = 1.5) -> dict[str, Any]:
    """A heavy GEMM back to back for `seconds` from 1 s idle, then 1.5 s idle: when does the cap
    engage (power and the clock), and how soon after is the clock back at its maximum."""
    call, flops, _ = shape_call(label, pool)
    for i in range(3):
        call(i)
    torch.cuda.synchronize()
    time.sleep(1.0)
    sampler = Sampler(nvml, 0.005)
    sampler.start()
    t0 = time.monotonic()
    marks = []
    i = 0
    while time.monotonic() - t0 < seconds:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            call(i)
            i += 1
        e.record()
        e.synchronize()
        marks.append((round(time.monotonic() - t0, 4), round(10 * flops / (s.elapsed_time(e) / 1e3) / 1e12, 1)))
    stopped = time.monotonic() - t0
    time.sleep(1.5)
    sampler.stop.set()
    sampler.join()
    return {
        "label": label,
        "stopped_s": stopped,
        "tflops_per_10_calls": marks,
        "clock": [
            (round(x["t"] - t0, 4), x.get("sm_mhz"), x.get("power_w"), x.get("power_instant_w"), x.get("reasons"))
            for x in sampler.samples
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=["per-call", "windows", "long-win", "graph"])
    parser.add_argument("--no-state", action="store_true", help="skip the ramp and cap experiments")
    args = parser.parse_args()
    nvml = Nvml()
    pool: dict[str, side.OperandPool] = {}
    doc: dict[str, Any] = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "passes": []}
    t_start = time.monotonic()
    doc["first_call_s"] = {}
    for label in SHAPES:  # first call of each shape in this process: lazy loading + heuristics
        call, flops, _ = shape_call(label, pool)
        torch.cuda.synchronize()
        t = time.perf_counter()
        call(0)
        torch.cuda.synchronize()
        doc["first_call_s"][label] = time.perf_counter() - t
    for p in range(args.passes):
        rows = {}
        for method in args.methods:
            for label in SHAPES:
                call, flops, rotation = shape_call(label, pool)
                if method == "per-call":
                    r = per_call(call, nvml)
                elif method == "windows":
                    r = windowed(call, nvml, 0.025, 3, 0.05)
                elif method == "long-win":
                    r = windowed(call, nvml, 0.1, 3, 0.0)
                else:
                    quick = windowed(call, nvml, 0.005, 1, 0.0)["s"]
                    if quick > 100e-6:
                        continue
                    r = graphed(call, nvml)
                r["tflops"] = flops / r["s"] / 1e12
                r["rotation"] = rotation
                rows[f"{method}/{label}"] = r
        doc["passes"].append(rows)
        print(f"pass {p + 1} done at {time.monotonic() - t_start:.1f} s", file=sys.stderr)
    if not args.no_state:
        doc["ramp_from_idle"] = ramp_from_idle(nvml, pool)
        doc["cap_onset"] = cap_onset(nvml, pool)
    print(json.dumps(doc, default=str))
    # the table: TFLOPS per pass, range over median, clock before/after
    print(
        f"{'method/shape':<34}"
        + "".join(f"{'p' + str(i + 1):>9}" for i in range(args.passes))
        + "   range%   within%   MHz(before->after, last pass)",
        file=sys.stderr,
    )
    for key in doc["passes"][0]:
        vals = [ps[key]["tflops"] for ps in doc["passes"] if key in ps]
        rng = (max(vals) - min(vals)) / statistics.median(vals) * 100
        last = doc["passes"][-1][key]
        if "windows" in last:
            mhz = (
                f"{[w['before'].get('sm_mhz') for w in last['windows']]}->{last['windows'][-1]['after'].get('sm_mhz')}"
            )
        else:
            mhz = f"{last.get('before', {}).get('sm_mhz')}->{last.get('after', {}).get('sm_mhz')}"
        print(
            f"{key:<34}" + "".join(f"{v:9.1f}" for v in vals) + f"{rng:9.2f}{last['spread'] * 100:9.2f}   {mhz}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
