"""Sustained GEMM for the stress probe: one-second buckets, every result checked on the device.

Standard library and torch only. Inputs come from a fixed seed; after a short warm-up one
result is kept as the reference, and every later result is compared with it bit for bit on the
device (`torch.ne` on an integer view of the output, the mismatched elements summed into a
per-iteration slot of a device tensor that is copied back once per bucket). Each GEMM is timed
by its own pair of CUDA events (perf_counter on a CPU: harness.probes.timing); the compare runs outside that pair, so
`gemm_ms` is the GEMM alone and the bucket's span also holds the checking. The host waits only
for the iteration IN_FLIGHT iterations back, so the queue never runs dry inside a bucket.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.analysis.stress.buckets import GEMM_MS_DECIMALS, bucket_capacity
from harness.probes.roofline.gemms import FP8_MAX, TORCH_DTYPES
from harness.probes.stress.count import MaskCounter
from harness.probes.timing import Clock

IN_FLIGHT = 3  # iterations queued ahead of the host
WARMUP_ITERATIONS = {"cuda": 3, "cpu": 3}
INJECT_ELEMENT = (0, 0)  # --inject-fault gemm flips bit 0 of this output element


@dataclass(frozen=True)
class GemmPlan:
    m: int
    n: int
    k: int
    dtype: str
    device: str
    seed: int
    check: bool
    bucket_s: float
    inject_iteration: int | None = None


def compare_view_dtype(element_bytes: int) -> torch.dtype:
    return {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[element_bytes]


class Operands:
    """Fixed-seed inputs (A [m,k] row-major, B [k,n] column-major), the output, reference and mask."""

    def __init__(self, plan: GemmPlan) -> None:
        generator = torch.Generator(device=plan.device).manual_seed(plan.seed)
        self.plan = plan
        self.scales: tuple[torch.Tensor, torch.Tensor] | None = None
        if plan.dtype == "fp8":
            a, scale_a = _fp8(
                torch.randn(plan.m, plan.k, generator=generator, device=plan.device, dtype=torch.bfloat16)
            )
            w, scale_b = _fp8(
                torch.randn(plan.n, plan.k, generator=generator, device=plan.device, dtype=torch.bfloat16)
            )
            self.scales = (scale_a, scale_b)
            out_dtype = torch.bfloat16
        else:
            dtype = TORCH_DTYPES[plan.dtype]
            a = torch.randn(plan.m, plan.k, generator=generator, device=plan.device, dtype=dtype)
            w = torch.randn(plan.n, plan.k, generator=generator, device=plan.device, dtype=dtype)
            out_dtype = dtype
        self.a, self.b = a, w.t()
        self.out = torch.empty(plan.m, plan.n, device=plan.device, dtype=out_dtype)
        self.reference = torch.empty_like(self.out)
        self.counter = MaskCounter(plan.m * plan.n, plan.device)
        self.mask = self.counter.mask((plan.m, plan.n))
        view = compare_view_dtype(self.out.element_size())
        self.out_bits, self.reference_bits = self.out.view(view), self.reference.view(view)

    def gemm(self) -> None:
        if self.scales is not None:
            torch._scaled_mm(
                self.a, self.b, scale_a=self.scales[0], scale_b=self.scales[1], out_dtype=torch.bfloat16, out=self.out
            )
        else:
            torch.mm(self.a, self.b, out=self.out)

    def compare_into(self, slot: torch.Tensor) -> None:
        """Count the output elements whose bits differ from the reference into `slot` (on the device)."""
        torch.ne(self.out_bits, self.reference_bits, out=self.mask)
        self.counter.count_into(slot)

    def flip_one_bit(self) -> None:
        """The test hook: flip bit 0 of one output element between the GEMM and its check."""
        row, col = INJECT_ELEMENT
        self.out_bits[row : row + 1, col : col + 1].bitwise_xor_(1)


def _fp8(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float8_e4m3fn with its own per-tensor float32 scale (x = q * scale), as the roofline probe quantizes."""
    scale = (values.abs().max().float() / FP8_MAX).reshape(1)
    return (values / scale).to(torch.float8_e4m3fn), scale


@dataclass
class OpenBucket:
    index: int
    first_iteration: int
    start_s: float
    start_marker: Any
    counts: Any
    capacity: int
    pairs: list[tuple[Any, Any]] = field(default_factory=list)
    end_s: float = 0.0
    end_marker: Any = None
    readback: Any = None
    readback_done: Any = None
    pinned: Any = None
    closed_by: str = "time"


class GemmLoop:
    """Runs the GEMM phase: `GemmLoop(plan, time_zero).run(seconds, on_bucket)`."""

    def __init__(self, plan: GemmPlan, time_zero: float) -> None:
        self.plan, self.time_zero = plan, time_zero
        self.clock = Clock.of(torch, plan.device)
        self.ops = Operands(plan)
        self.iteration = 0
        self.capacity = 0
        self.warmup: dict[str, Any] = {}
        self.injected: dict[str, Any] | None = None
        self.pinned: list[Any] = []  # page-locked readback buffers, reused once their bucket is recorded

    def now_s(self) -> float:
        return time.monotonic() - self.time_zero

    def prepare(self) -> dict[str, Any]:
        """Warm up, size a bucket's capacity from the fastest warm-up GEMM, keep one result as the reference."""
        count = WARMUP_ITERATIONS[self.plan.device]
        marks = [self.clock.mark()]
        for _ in range(count):
            self.ops.gemm()
            marks.append(self.clock.mark())
        self.clock.wait(marks[-1])
        # The capacity is sized from the time as recorded (rounded), so that verify recomputes the same count.
        fastest_ms = round(
            min(self.clock.milliseconds(a, b) for a, b in zip(marks, marks[1:], strict=False)), GEMM_MS_DECIMALS
        )
        self.capacity = bucket_capacity(fastest_ms, self.plan.bucket_s)
        self.ops.gemm()
        self.ops.reference.copy_(self.ops.out)
        done = self.clock.mark()
        self.clock.wait(done)
        self.warmup = {
            "iterations": count,
            "fastest_gemm_ms": fastest_ms,
            "bucket_capacity_iterations": self.capacity,
            "reference_at_s": round(self.now_s(), 4),
        }
        return self.warmup

    def _open(self, index: int) -> OpenBucket:
        counts = torch.zeros(self.capacity, dtype=torch.int64, device=self.plan.device) if self.plan.check else None
        return OpenBucket(
            index=index,
            first_iteration=self.iteration,
            start_s=self.now_s(),
            start_marker=self.clock.mark(),
            counts=counts,
            capacity=self.capacity,
        )

    def _iterate(self, bucket: OpenBucket) -> Any:
        ops, slot = self.ops, len(bucket.pairs)
        start = self.clock.mark()
        ops.gemm()
        end = self.clock.mark()
        if self.iteration == self.plan.inject_iteration:
            ops.flip_one_bit()
            self.injected = {
                "kind": "gemm",
                "iteration": self.iteration,
                "element": list(INJECT_ELEMENT),
                "bit": 0,
                "when": "after the GEMM, before its check",
            }
        if bucket.counts is not None:
            ops.compare_into(bucket.counts[slot])
        bucket.pairs.append((start, end))
        self.iteration += 1
        return self.clock.mark() if bucket.counts is not None else end

    def _close(self, bucket: OpenBucket) -> None:
        bucket.end_marker = self.clock.mark()
        bucket.end_s = self.now_s()
        if bucket.counts is not None:
            used = bucket.counts[: len(bucket.pairs)]
            if self.clock.cuda:
                bucket.pinned = (
                    self.pinned.pop() if self.pinned else torch.empty(self.capacity, dtype=torch.int64, pin_memory=True)
                )
                bucket.readback = bucket.pinned[: len(bucket.pairs)]
                bucket.readback.copy_(used, non_blocking=True)
            else:
                bucket.readback = used
        bucket.readback_done = self.clock.mark()

    def _record(self, bucket: OpenBucket) -> dict[str, Any]:
        self.clock.wait(bucket.readback_done)
        elapsed = self.clock.milliseconds
        counts = bucket.readback.tolist() if bucket.readback is not None else None
        if bucket.pinned is not None:
            self.pinned.append(bucket.pinned)
        return {
            "index": bucket.index,
            "first_iteration": bucket.first_iteration,
            "iterations": len(bucket.pairs),
            "start_s": round(bucket.start_s, 4),
            "end_s": round(bucket.end_s, 4),
            "span_ms": round(elapsed(bucket.start_marker, bucket.end_marker), GEMM_MS_DECIMALS),
            "gemm_ms": [round(elapsed(s, e), GEMM_MS_DECIMALS) for s, e in bucket.pairs],
            "mismatched_elements": counts,
            "closed_by": bucket.closed_by,
        }

    def run(self, seconds: float, on_bucket: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """GEMMs back to back for `seconds`; each finished bucket goes to `on_bucket` as it completes."""
        started = self.now_s()
        pending: deque[Any] = deque()
        closed: deque[OpenBucket] = deque()
        index = 0
        while True:
            bucket = self._open(index)
            boundary = started + min((index + 1) * self.plan.bucket_s, seconds)
            while not bucket.pairs or self.now_s() < boundary:  # at least one GEMM per bucket
                if len(bucket.pairs) >= bucket.capacity:
                    bucket.closed_by = "capacity"
                    break
                pending.append(self._iterate(bucket))
                if len(pending) > IN_FLIGHT:
                    self.clock.wait(pending.popleft())
                while closed and self.clock.done(closed[0].readback_done):
                    on_bucket(self._record(closed.popleft()))
            self._close(bucket)
            closed.append(bucket)
            index += 1
            if self.now_s() >= started + seconds:
                break
        while closed:
            on_bucket(self._record(closed.popleft()))
        return {
            "started_s": round(started, 4),
            "finished_s": round(self.now_s(), 4),
            "iterations": self.iteration,
            "fault_injected": self.injected,
        }
