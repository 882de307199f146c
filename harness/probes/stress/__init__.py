"""Stress probe: sustained GEMM with every result checked, a memory test, power, thermals and NVML
error events, on every visible GPU at once (one worker process per GPU), or the CPU.

`python -m harness.probes.stress [--seconds S] [--dtype bf16|fp16|tf32|fp32|fp8] [--memory-share F]
[--no-check] [--no-memory-test] [--inject-fault gemm|memory] [--device auto|cuda|cpu]` writes one
JSON document (schemas/stress.schema.json).

Each worker: NVML telemetry every --sample-interval-s and an NVML event set for XID and ECC events
start; the GEMM runs back to back for --seconds in one-second buckets (TFLOPS from the CUDA-event
time of each GEMM, every result compared bit for bit with a reference computed once from fixed-seed
inputs); then the memory test writes and reads back four patterns over a share of the free device
memory; the ECC and row-remap counters are read before and after. All GPUs run together, so
shared power, cooling and PCIe are loaded together. --inject-fault flips one bit between compute and
check, to show the checkers catch it; the document records that it did.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.analysis.stress import checks as stress_checks
from harness.analysis.stress import figures as analysis
from harness.probes import cuda_driver
from harness.probes.contract import (
    Option,
    ProbeUsageError,
    check_options,
    loading,
    log,
    options_parser,
    positive,
    probe_main,
    progress,
    real,
)
from harness.probes.health.torch_files import torch_build, torch_directory
from harness.probes.policy import SHAPE, at_most, matching, take
from harness.probes.scratch import scratch
from harness.probes.stress.document import device_record
from harness.probes.stress.settings import (
    BUCKET_S,
    INJECT_GEMM_ITERATION,
    settings_for,
    shape_problem,
    sizing,
    worker_config,
)
from harness.probes.stress.supervisor import StressSupervisor
from harness.probes.stress.warm import prestart  # noqa: F401 - harness.probes.prestart calls it

NAME = "stress"
DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8")
GPU_CHUNK_MIB = 1024
SEED = 16
STALL_S = 120.0  # a worker silent this long is ended (CUDA start on 8 GPUs takes well under a minute)
DEADLINE_EXTRA_S = 300.0  # setup, the memory test and the counters, beyond --seconds
# The longest GEMM phase a dossier runs, wherever --seconds or `dossier run --stress-seconds` is
# given: 50 minutes, over three times DCGM level 3's ~15 minute diagnostic; a longer soak is a
# burn-in, for a burn-in tool (the step's timeout is sized from this).
MAX_SECONDS = 3000.0


def seconds_problem(value: float) -> str | None:
    """A check: a GEMM phase longer than zero and at most MAX_SECONDS."""
    if value <= 0:
        return f"{value:g}: must be positive"
    return None if value <= MAX_SECONDS else f"{value:g}: at most {MAX_SECONDS:g} seconds (50 minutes)"


OPTIONS = (
    Option(
        ("--seconds",),
        dict(
            type=real,
            metavar="S",
            help=f"GEMM phase length (default 60 on a GPU; 3 on a CPU, sized for CI; at most {MAX_SECONDS:g})",
        ),
        check=seconds_problem,
        replay=take(),
    ),
    Option(("--dtype",), dict(choices=DTYPES, help="GEMM dtype (default bf16 on a GPU, fp32 on a CPU)"), replay=take()),
    Option(
        ("--shape",),
        dict(
            metavar="MxNxK",
            help="GEMM shape C[M,N] = A[M,K] @ B[K,N] (default 8192x8192x16384 on a GPU, "
            "8192x8192x32768 for fp8; 512x512x1024 on a CPU)",
        ),
        check=shape_problem,
        replay=take(matching(SHAPE, "an MxNxK shape")),
    ),
    Option(
        ("--memory-share",),
        dict(
            type=real,
            default=0.8,
            metavar="F",
            help="share of the device memory free after the GEMM phase that the memory test "
            "covers, 0 < F <= 0.95 (default 0.8; a CPU run tests 64 MiB of host memory)",
        ),
        check=lambda f: None if 0 < f <= 0.95 else f"{f:g}: must be in (0, 0.95]",
        replay=take(),
    ),
    Option(
        ("--memory-chunk-mib",),
        dict(
            type=int, default=GPU_CHUNK_MIB, metavar="MIB", help=f"memory-test chunk on a GPU (default {GPU_CHUNK_MIB})"
        ),
        check=lambda n: None if n >= 1 else f"{n}: must be at least 1",
        replay=take(at_most(1_048_576, "MiB")),
    ),
    Option(("--no-memory-test",), dict(action="store_true", help="skip the memory test"), replay=take()),
    Option(
        ("--no-check",),
        dict(action="store_true", help="do not compare GEMM results (to measure what checking costs)"),
        replay=take(),
    ),
    Option(
        ("--inject-fault",),
        dict(
            choices=("gemm", "memory"),
            help="self-test: flip one bit between compute and check (GEMM iteration "
            f"{INJECT_GEMM_ITERATION}, or one word of the first memory pattern); recorded",
        ),
        replay=take(),
    ),
    Option(
        ("--sample-interval-s",),
        dict(type=real, default=0.1, metavar="S", help="NVML sampling interval (default 0.1)"),
        check=positive,
        replay=take(at_most(10, "s")),
    ),
    Option(
        ("--seed",),
        dict(type=int, default=SEED, help=f"seed of the GEMM inputs and the random memory pattern (default {SEED})"),
        replay=take(at_most(2**63 - 1)),
    ),
    Option(
        ("--device",),
        dict(
            choices=("auto", "cuda", "cpu"),
            default="auto",
            help="where to run (default: every visible GPU when torch sees one, else the CPU)",
        ),
        replay=take(),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


def check_arguments(args: argparse.Namespace) -> None:
    check_options(args, OPTIONS)
    if args.inject_fault == "gemm" and args.no_check:
        raise ProbeUsageError("--inject-fault gemm needs the result check: drop --no-check")
    if args.inject_fault == "memory" and args.no_memory_test:
        raise ProbeUsageError("--inject-fault memory needs the memory test: drop --no-memory-test")


def visible_gpus() -> tuple[int, str]:
    """(CUDA devices the driver lists, honouring CUDA_VISIBLE_DEVICES; why none), read through libcuda
    and torch/version.py so that this process never imports torch: only the workers do, in parallel."""
    build = torch_build(torch_directory())["torch_cuda_build"]
    if not isinstance(build, str):
        why = build["unavailable"] if isinstance(build, dict) else "torch/version.py names no CUDA version"
        return 0, f"torch is not a CUDA build ({why})"
    driver, loaded = cuda_driver.load()
    if driver is None:
        return 0, loaded["cuda_driver_library"]["unavailable"]
    try:
        driver.call("cuInit", 0)
        count = driver.integer("cuDeviceGetCount")
    except cuda_driver.CudaError as exc:
        return 0, str(exc)
    return count, "" if count else "the CUDA driver lists no device"


def pick_device(args: argparse.Namespace) -> tuple[str, list[int], str]:
    """(cuda or cpu, the worker indices, why not a GPU when it is the CPU)."""
    if args.device == "cpu":
        return "cpu", [0], "--device cpu"
    count, why = visible_gpus()
    if count:
        return "cuda", list(range(count)), ""
    if args.device == "cuda":
        raise ProbeUsageError(f"--device cuda: no CUDA device ({why})")
    return "cpu", [0], why


class Progress:
    """One progress line per finished bucket of the slowest worker, naming each device's rate and power."""

    def __init__(self, indices: list[int], seconds: float, device: str) -> None:
        self.seconds, self.device = seconds, device
        self.latest: dict[int, str] = dict.fromkeys(indices, "starting")
        self.buckets: dict[int, int] = dict.fromkeys(indices, 0)
        self.flop = 0
        self.pids: Callable[[], list[int]] = lambda: []  # the workers' pids (the supervisor's, once started)
        self.load_what = ""
        self.said_loading = False

    def __call__(self, index: int, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "bucket":
            bucket = event["bucket"]
            self.buckets[index] = bucket["index"] + 1
            rate = bucket["iterations"] * self.flop / (sum(bucket["gemm_ms"]) / 1e3) / 1e12
            self.latest[index] = f"{rate:.4g} TFLOPS"
        elif kind in ("memory_started", "memory_pattern", "error"):
            self.latest[index] = {"memory_started": "memory test", "error": "failed"}.get(
                kind, f"memory {event.get('record', {}).get('pattern')}"
            )
        else:
            return
        label = "GPU" if self.device == "cuda" else "CPU"
        what = "stress: " + ", ".join(f"{label}{i} {text}" for i, text in sorted(self.latest.items()))
        done = min(self.buckets.values()) * BUCKET_S
        progress(min(int(done), int(self.seconds)), int(self.seconds), what)
        if kind == "bucket" and not self.said_loading and done >= self.seconds / 2:  # every device at full load
            self.said_loading = True
            loading(
                [os.getpid(), *self.pids()], f"{self.load_what}, at {done:g} s of {self.seconds:g}", self.seconds - done
            )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_arguments(args)
    device, indices, no_gpu = pick_device(args)
    settings = settings_for(args, device)
    watch = Progress(indices, settings["seconds"], device)
    watch.flop = settings["flop_per_gemm"]
    shape = "x".join(str(settings["shape"][d]) for d in "mnk")
    watch.load_what = (
        f"the stress step's {settings['dtype']} GEMM {shape} back to back on "
        f"{'every GPU' if device == 'cuda' else 'the CPU'}, one worker process each"
    )
    log(f"stress: {len(indices)} worker(s) on {device}, {settings['dtype']} for {settings['seconds']:g} s")
    with scratch("stress-") as workdir:  # (a SIGKILL's leftovers removed by the next run)
        supervisor = StressSupervisor(
            worker_config(settings), indices, Path(workdir), STALL_S, settings["seconds"] + DEADLINE_EXTRA_S, watch
        )
        watch.pids = lambda: [w.proc.pid for w in supervisor.workers]
        workers = supervisor.run()
        records = [device_record(w, settings) for w in workers]
    limitations = [{"what": f"worker {r['index']}", "why": r["failure"]["message"]} for r in records if r["failure"]]
    if device == "cpu":
        limitations.append({"what": "a GPU to stress", "why": f"the CPU runs instead: {no_gpu}"})
        limitations.append(
            {
                "what": "NVML telemetry, XID/ECC events and error counters",
                "why": records[0]["nvml"].get("unavailable", "a CPU run"),
            }
        )
    document = {
        "device": device,
        "torch_version": torch_build(torch_directory())["torch_version"],
        "settings": settings,
        "rules": stress_checks.rules(),
        "devices": records,
        "sizing": sizing(settings, records),
        "limitations": limitations,
    }
    document["summary"] = analysis.headlines(document)
    return document


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
