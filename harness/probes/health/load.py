"""A known load for `health --under-load`: bf16 GEMMs and a device-to-device copy on every
visible device, back to back, while NVML samples each device (lab step M1T5.7).

The load runs in the probe's own process (on a worker thread), so its pid is the probe's pid:
the document records it, and any other process NVML lists on a device is foreign.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from harness.probes.contract import progress, utc_now
from harness.probes.nvml import Sampler
from harness.probes.timing import Clock

GEMM_DTYPE = "bfloat16"
IN_FLIGHT = 2  # rounds queued per device: enough to keep it busy, few enough to stop on time
COPY_MAX_BYTES = 1 << 30
LOAD_KIND = (
    f"{GEMM_DTYPE} GEMM (n x n times n x n) then a device-to-device copy (torch "
    "copy_), queued back to back on every visible device from one thread"
)


def plan(free_bytes: int) -> dict[str, int]:
    """GEMM size and copy size for a device with `free_bytes` free: large enough to keep an
    H200 busy (8192^3 bf16 is ~1.1 TFLOP, ~1.5 ms), small enough to leave the device usable."""
    n = 8192 if free_bytes >= 4 << 30 else 4096 if free_bytes >= 1 << 30 else 2048
    copy_bytes = min(COPY_MAX_BYTES, free_bytes // 8) // (1 << 20) * (1 << 20)
    return {"gemm_n": n, "copy_bytes": max(copy_bytes, 1 << 20)}


class DeviceLoad:
    """Buffers and counters for one torch device."""

    def __init__(self, torch: Any, torch_index: int, nvml_index: int) -> None:
        self.torch, self.torch_index, self.nvml_index = torch, torch_index, nvml_index
        device = torch.device("cuda", torch_index)
        free, _total = torch.cuda.mem_get_info(device)
        self.sizes = plan(free)
        n = self.sizes["gemm_n"]
        with torch.cuda.device(device):
            self.a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
            self.b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
            self.c = torch.empty(n, n, device=device, dtype=torch.bfloat16)
            elements = self.sizes["copy_bytes"] // 4
            self.src = torch.ones(elements, device=device, dtype=torch.float32)
            self.dst = torch.empty_like(self.src)
        self.clock = Clock(torch, cuda=True, device=device)  # harness.probes.timing: one window over every round
        self.start: Any = None  # the window's first marker (warm_up)
        self.device = device
        self.rounds = 0
        self.pending: deque[Any] = deque()

    def round(self) -> None:
        """Queue one GEMM and one copy; wait only for the round IN_FLIGHT rounds ago."""
        torch = self.torch
        with torch.cuda.device(self.device):
            if len(self.pending) >= IN_FLIGHT:
                self.pending.popleft().synchronize()
            torch.matmul(self.a, self.b, out=self.c)
            self.dst.copy_(self.src)
            done = torch.cuda.Event()
            done.record()
            self.pending.append(done)
        self.rounds += 1

    def warm_up(self) -> None:
        self.round()
        self.torch.cuda.synchronize(self.device)
        self.pending.clear()
        self.rounds = 0
        with self.torch.cuda.device(self.device):
            self.start = self.clock.mark()

    def finish(self) -> dict[str, Any]:
        with self.torch.cuda.device(self.device):
            end = self.clock.mark()
        self.clock.synchronize()
        elapsed_s = self.clock.seconds(self.start, end)
        n, copy_bytes = self.sizes["gemm_n"], self.sizes["copy_bytes"]
        return {
            "torch_index": self.torch_index,
            "nvml_index": self.nvml_index,
            "gemm_n": n,
            "gemm_dtype": GEMM_DTYPE,
            "copy_mib": copy_bytes / 2**20,
            "rounds": self.rounds,
            "gpu_elapsed_s": round(elapsed_s, 6),
            "gemm_flop": 2 * n**3 * self.rounds,
            "copy_bytes_moved": 2 * copy_bytes * self.rounds,  # each copy reads and writes its bytes
        }


def run_load(
    torch: Any,
    pynvml: Any,
    targets: list[tuple[int, int, Any]],
    seconds: float,
    interval_s: float,
    snapshot: Callable[[], Any],
) -> tuple[dict[str, Any], Any]:
    """Load every (torch_index, nvml_index, handle) for `seconds`, sampling each device.

    `snapshot()` is called halfway through, while the load runs; its result is returned beside
    the load's record.
    """
    loads = [DeviceLoad(torch, t, n) for t, n, _ in targets]
    for load in loads:
        load.warm_up()
    samplers = [Sampler(pynvml, handle, interval_s) for _, _, handle in targets]
    errors: list[BaseException] = []
    stop = threading.Event()

    def work() -> None:
        try:
            while not stop.is_set():
                for load in loads:
                    load.round()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)

    started_at, started = utc_now(), time.monotonic()
    worker = threading.Thread(target=work, name="health-load", daemon=True)
    with contextlib.ExitStack() as stack:
        for sampler in samplers:
            stack.enter_context(sampler)  # closed last: each takes one closing sample
        worker.start()
        try:
            _wait_until(started + seconds / 2, started, seconds, errors)
            middle = snapshot()
            _wait_until(started + seconds, started, seconds, errors)
        finally:
            stop.set()
            worker.join()
        if errors:
            raise errors[0]
        records = [load.finish() for load in loads]
        finished = time.monotonic()
    for record, sampler in zip(records, samplers, strict=True):
        record["samples"] = sampler.samples
    return {
        "kind": LOAD_KIND,
        "requested_s": seconds,
        "pids": [os.getpid()],
        "started_at": started_at,
        "finished_at": utc_now(),
        "started_monotonic_s": started,
        "finished_monotonic_s": finished,
        "sample_interval_s": interval_s,
        "devices": records,
    }, middle


def _wait_until(deadline: float, started: float, seconds: float, errors: list[BaseException]) -> None:
    while (now := time.monotonic()) < deadline and not errors:
        progress(int(now - started), int(seconds), "under load")
        time.sleep(min(1.0, deadline - now))


def observe(
    pynvml: Any, handles: list[Any], seconds: float, interval_s: float, snapshot: Callable[[], Any]
) -> tuple[dict[str, Any], Any]:
    """Sample every device for `seconds` while another process loads it (no load of this probe's own),
    calling `snapshot()` halfway; (the load record, the snapshot). Each device's record is its NVML
    index and its samples (the schema's observed load device)."""
    samplers = [Sampler(pynvml, handle, interval_s) for handle in handles]
    started_at, started = utc_now(), time.monotonic()
    with contextlib.ExitStack() as stack:
        for sampler in samplers:
            stack.enter_context(sampler)
        time.sleep(seconds / 2)
        middle = snapshot()
        time.sleep(max(0.0, started + seconds - time.monotonic()))
        finished = time.monotonic()
    return {
        "kind": "observed",
        "requested_s": seconds,
        "pids": [],
        "started_at": started_at,
        "finished_at": utc_now(),
        "started_monotonic_s": started,
        "finished_monotonic_s": finished,
        "sample_interval_s": interval_s,
        "observed": True,
        "devices": [{"nvml_index": index, "samples": sampler.samples} for index, sampler in enumerate(samplers)],
    }, middle
