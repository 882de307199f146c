"""Transfers: host-to-device and device-to-host copies, peer copies between GPUs, the links measured.

`python -m harness.probes.transfer [--sizes 4K 64K 1M ...] [--device-index 0 1] [--point-budget-s S]
[--skip pageable bidirectional peer all-gpus numa local] [--device auto|cuda|cpu]` writes one JSON
document (schemas/transfer.schema.json).

What nvbandwidth's *_memcpy_ce tests and DCGM's PCIe test measure, per GPU: host-to-device and
device-to-host with pinned and with pageable host memory, each direction alone and both at once
(one stream each), a size sweep with its plateau (never the maximum) and the small-copy latency;
the device-local copy; where the host has two NUMA nodes, the same copy from the GPU's node and
from a far one. With two or more GPUs: whether peer access is possible, the peer matrix (write:
the source GPU's copy engine pushes; read: the destination's pulls; one direction and both) and
every GPU copying to and from the host at once. Every copy's own time is kept raw; each figure
stands beside the theoretical rate of the link it crossed (NVML's PCIe generation x width,
NVLink count x per-link rate). On a CPU: host memory copies, sized for CI, recorded as such.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.analysis.allreduce.figures import format_size, parse_size
from harness.analysis.transfer.checks import LARGE_COUNT
from harness.probes.bandwidth.device import cpu_cache, cpu_name, meminfo_bytes
from harness.probes.contract import (
    Option,
    ProbeUsageError,
    check_options,
    options_parser,
    positive,
    probe_main,
    progress,
    real,
    unavailable,
)
from harness.probes.nvml import NvmlSession
from harness.probes.policy import at_most, sizes_at_most, take
from harness.probes.topology import TopologyCapture
from harness.probes.transfer.copies import MAX_COPIES, MIN_COPIES, WARMUP_COPIES, Stream, sweep_alone
from harness.probes.transfer.document import COPY_PATHS, assemble, series_record
from harness.probes.transfer.gpu import GpuRun
from harness.probes.transfer.host import host_nodes, numa_plan
from harness.probes.transfer.links import gpu_facts, peer_access, topology

NAME = "transfer"
GPU_SIZES = ("4K", "64K", "1M", "4M", "16M", "64M", "256M", "512M", "1G")
CPU_SIZES = ("4K", "64K", "1M", "16M", "64M")  # small on purpose: CI runners have 2 cores
POINT_BUDGET_S = {"cuda": 0.1, "cpu": 0.02}
DEVICE_SAFE_FRACTION = 0.5  # two device buffers of the largest size within half the free memory
HOST_SAFE_FRACTION = 0.25  # every host buffer within a quarter of MemAvailable
SKIPPABLE = ("pageable", "bidirectional", "local", "numa", "peer", "all-gpus")
# A CPU run's host memory copies are timed with one torch thread. torch splits a copy of 32768 elements
# or more (its grain size; 64 KiB of bytes) over its intra-op threads, and waking them costs more than
# the copy: on the project's shared 2-core VM (2026-12-01, torch 2.13.0 CPU, 30 copies each) a 64 KiB copy
# took a median 24.9 us and up to 12.0 ms with 2 threads, 4.3 us and at most 6.1 us with 1; the
# 64 KiB point of the sweep read 0.004 GB/s (four of five copies 17-19 ms), a dip that measured the
# scheduler, not memory. One thread is also how the CUDA driver copies pageable host memory.
HOST_COPY_THREADS = 1
HOST_COPY_THREADS_WHY = (
    "one thread: torch splits a copy of 64 KiB or more over its threads, and waking them "
    "cost up to 12 ms a copy on a shared 2-core VM (64 KiB: 24.9 us median with 2 threads, "
    "4.3 us with 1), a dip that measured the scheduler, not memory"
)


OPTIONS = (
    Option(
        ("--sizes",),
        dict(
            nargs="+",
            metavar="SIZE",
            help="copy sizes, bytes or K/M/G (binary) (default: 4K 64K 1M 4M 16M 64M 256M 512M 1G "
            "on a GPU, fewer if memory is short; 4K 64K 1M 16M 64M on the CPU)",
        ),
        replay=take(sizes_at_most(parse_size, 64 * 2**30)),
    ),
    Option(
        ("--device-index",),
        dict(type=int, nargs="+", metavar="INDEX", help="torch device indices to measure (default: every visible GPU)"),
        replay=take(at_most(1023)),
    ),
    Option(
        ("--point-budget-s",),
        dict(type=real, help="seconds of timed copies per size (default: 0.1 on a GPU, 0.02 on the CPU)"),
        check=positive,
        replay=take(at_most(60, "s")),
    ),
    Option(("--skip",), dict(nargs="+", choices=SKIPPABLE, default=[], help="parts not to measure"), replay=take()),
    Option(
        ("--device",),
        dict(
            choices=["auto", "cuda", "cpu"],
            default="auto",
            help="auto: the GPUs when torch sees one, else host memory copies",
        ),
        replay=take(),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__.split("\n\n")[0], OPTIONS)


def parse_sizes(texts: list[str] | None, device: str) -> tuple[list[int], bool]:
    """(sorted sizes in bytes, whether they were the defaults)."""
    try:
        sizes = sorted({parse_size(t) for t in (texts or (GPU_SIZES if device == "cuda" else CPU_SIZES))})
    except ValueError as exc:
        raise ProbeUsageError(f"--sizes: {exc}") from exc
    return sizes, texts is None


def fit_sizes(sizes: list[int], defaults: bool, need: int, available: int, where: str) -> list[int]:
    """Drop default sizes whose `need` x size exceeds `available`; refuse explicit ones."""
    fitting = [s for s in sizes if need * s <= available]
    if len(fitting) == len(sizes):
        return sizes
    if not defaults or not fitting:
        big = max(s for s in sizes if need * s > available)
        raise ProbeUsageError(
            f"--sizes {format_size(big)}: {need} buffers of it need {need * big / 2**20:.0f} MiB, "
            f"more than the {available / 2**20:.0f} MiB {where} allows"
        )
    return fitting


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_options(args, OPTIONS)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ProbeUsageError(f"--device cuda: torch sees no CUDA device (torch {torch.__version__})")
    device = "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
    budget = args.point_budget_s or POINT_BUDGET_S[device]
    sizes, defaults = parse_sizes(args.sizes, device)
    timing = {
        "method": "cuda_events" if device == "cuda" else "perf_counter",
        "statistic": "median of per-copy times",
        "warmup_copies": WARMUP_COPIES,
        "point_budget_s": budget,
        "min_copies": MIN_COPIES,
        "max_copies": MAX_COPIES,
    }
    if device == "cpu":
        if args.device_index:
            raise ProbeUsageError("--device-index: this run copies host memory on the CPU (no GPU is used)")
        return measure_cpu(torch, args, sizes, defaults, timing)
    with NvmlSession() as nvml:
        return measure_gpus(torch, args, nvml, sizes, defaults, timing)


def measure_cpu(
    torch: Any, args: argparse.Namespace, sizes: list[int], defaults: bool, timing: dict[str, Any]
) -> dict[str, Any]:
    sizes = fit_sizes(
        sizes,
        defaults,
        2,
        int(meminfo_bytes("MemAvailable") * HOST_SAFE_FRACTION),
        f"{HOST_SAFE_FRACTION:.0%} of host memory available",
    )
    largest = max(sizes)
    src = torch.empty(largest, dtype=torch.uint8).fill_(0xA5)
    dst = torch.empty(largest, dtype=torch.uint8).fill_(0)
    progress(0, 1, "host memory copies")
    member = Stream("host/copy", lambda n: dst[:n].copy_(src[:n]))
    threads = torch.get_num_threads()
    torch.set_num_threads(HOST_COPY_THREADS)  # see HOST_COPY_THREADS_WHY
    try:
        points = sweep_alone(torch, member, sizes, timing["point_budget_s"])
    finally:
        torch.set_num_threads(threads)
    progress(1, 1, "done")
    no_gpu = "device=cpu: no GPU"
    limitations = [
        {
            "what": "PCIe transfers",
            "why": f"{no_gpu}; these are host memory copies through torch on the "
            "CPU (read and write in host memory), not PCIe and not a GPU link",
        },
        {"what": "pinned and pageable memory, both directions at once", "why": f"{no_gpu}: nothing to pin for"},
        {"what": "peer copies", "why": f"{no_gpu}: no peers"},
        {"what": "near and far NUMA node copies", "why": f"{no_gpu} to be near to or far from"},
    ]
    return assemble(
        device="cpu",
        torch_version=torch.__version__,
        sizes=sizes,
        large_sizes=sizes[-LARGE_COUNT:],
        timing=timing,
        host={
            "cpu_name": cpu_name(),
            "numa_nodes": host_nodes(),
            "cache": cpu_cache(),
            "torch_threads": HOST_COPY_THREADS,
            "torch_threads_why": HOST_COPY_THREADS_WHY,
        },
        gpus=[],
        topology=unavailable(no_gpu),
        peer={"measured": False, "why": f"{no_gpu}: no peer matrix", "access": {}},
        all_gpus={"measured": False, "why": f"{no_gpu}"},
        numa={"measured": False, "why": f"{no_gpu}"},
        series=[series_record("host/copy", "host_to_host", "host", COPY_PATHS["host_memory"], points)],
        groups=[],
        limitations=limitations,
        sizing=(
            f"device=cpu ({cpu_name()}, {HOST_COPY_THREADS} torch thread for the copies): host memory copies of "
            f"{', '.join(format_size(s) for s in sizes)}, sized small for 2-core CI runners; each size timed for "
            f"about {timing['point_budget_s']:g} s ({MIN_COPIES}-{MAX_COPIES} copies after {WARMUP_COPIES} warm-up)."
        ),
    )


def pick_gpus(torch: Any, requested: list[int] | None) -> list[int]:
    count = torch.cuda.device_count()
    gpus = sorted(set(requested)) if requested else list(range(count))
    bad = [g for g in gpus if not 0 <= g < count]
    if bad:
        raise ProbeUsageError(f"--device-index {' '.join(map(str, bad))}: torch sees {count} device(s)")
    return gpus


def measure_gpus(
    torch: Any, args: argparse.Namespace, nvml: NvmlSession, sizes: list[int], defaults: bool, timing: dict[str, Any]
) -> dict[str, Any]:
    capture = TopologyCapture.start()
    gpus = pick_gpus(torch, args.device_index)
    skip = set(args.skip)
    free = min(torch.cuda.mem_get_info(g)[0] for g in gpus)
    sizes = fit_sizes(
        sizes, defaults, 2, int(free * DEVICE_SAFE_FRACTION), f"{DEVICE_SAFE_FRACTION:.0%} of free GPU memory"
    )
    host_buffers = 2 * len(gpus) + 2 + (4 if "numa" not in skip else 0)
    sizes = fit_sizes(
        sizes,
        defaults,
        host_buffers,
        int(meminfo_bytes("MemAvailable") * HOST_SAFE_FRACTION),
        f"{HOST_SAFE_FRACTION:.0%} of host memory available",
    )
    large = sizes[-LARGE_COUNT:]
    facts_and_handles = [gpu_facts(torch, nvml, g) for g in gpus]
    facts = [f for f, _ in facts_and_handles]
    nodes = host_nodes()
    run = GpuRun(torch, gpus, sizes, large, timing["point_budget_s"], skip)
    numa_gpus = 0 if "numa" in skip else sum(numa_plan(nodes, f["numa"]["node"])[0] is not None for f in facts)
    run.total = planned_steps(len(gpus), skip, numa_gpus)
    run.allocate()
    numa_done = []
    for (record, handle), index in zip(facts_and_handles, gpus, strict=True):
        record["pcie"]["under_copy"], record["pcie"]["under_copy_how"] = run.under_copy(index, nvml.pynvml, handle)
        run.host_copies(index)
        if "local" not in skip:
            run.device_local(index)
        if "numa" not in skip:
            numa_done.append(run.numa(index, nodes, record["numa"]["node"]))
    access = peer_access(torch, gpus)
    peer, all_gpus = across_gpus(run, gpus, access, skip)
    progress(run.total, run.total, "done")
    return assemble(
        device="cuda",
        torch_version=torch.__version__,
        sizes=sizes,
        large_sizes=large,
        timing=timing,
        host={"cpu_name": cpu_name(), "numa_nodes": nodes},
        gpus=facts,
        topology=topology(capture.result(), facts),
        peer={**peer, "access": access},
        all_gpus=all_gpus,
        numa=numa_section(numa_done, skip, run.limitations),
        series=run.series,
        groups=run.groups,
        limitations=run.limitations,
        sizing=gpu_sizing(facts, sizes, large, timing, len(gpus)),
    )


def planned_steps(gpu_count: int, skip: set[str], numa_gpus: int) -> int:
    """Progress steps: one per series measured alone, one per group measured together."""
    bidirectional = "bidirectional" not in skip
    kinds = 1 + ("pageable" not in skip)
    per_gpu = kinds * (2 + bidirectional) + ("local" not in skip)
    pairs = gpu_count * (gpu_count - 1) // 2
    peer = 0 if "peer" in skip or gpu_count < 2 else pairs * (4 + 2 * bidirectional)
    together = 2 if gpu_count > 1 and "all-gpus" not in skip else 0
    return gpu_count * per_gpu + 4 * numa_gpus + peer + together


def across_gpus(
    run: GpuRun, gpus: list[int], access: dict[str, Any], skip: set[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    if len(gpus) < 2:
        why = f"{len(gpus)} GPU measured: a peer matrix needs 2"
        run.limitations.append({"what": "peer copies and all GPUs at once", "why": why})
        return {"measured": False, "why": why}, {"measured": False, "why": why}
    if "peer" in skip:
        peer = {"measured": False, "why": "--skip peer"}
    else:
        refused = [k for k, v in sorted(access.items()) if v is not True]
        run.peers(access)
        measured = any(s["direction"] == "device_to_device_peer" for s in run.series)
        peer = {
            "measured": measured,
            "why": (
                "every pair has peer access"
                if not refused
                else f"no peer access for {', '.join(refused)}: those cells are not measured"
            ),
        }
    if "all-gpus" in skip:
        return peer, {"measured": False, "why": "--skip all-gpus"}
    run.all_at_once()
    return peer, {"measured": True, "why": f"{len(gpus)} GPUs, pinned copies, one stream and thread each"}


def numa_section(done: list[bool], skip: set[str], limitations: list[dict[str, str]]) -> dict[str, Any]:
    if "numa" in skip:
        return {"measured": False, "why": "--skip numa"}
    if any(done):
        return {"measured": True, "why": "near and far node copies measured where the host has two nodes"}
    reasons = [item["why"] for item in limitations if item["what"].startswith("near and far NUMA")]
    return {"measured": False, "why": reasons[0] if reasons else "no GPU measured"}


def gpu_sizing(
    facts: list[dict[str, Any]], sizes: list[int], large: list[int], timing: dict[str, Any], count: int
) -> str:
    names = ", ".join(f"cuda:{f['torch_index']} {f['name']}" for f in facts)
    return (
        f"{names}: copies of {', '.join(format_size(s) for s in sizes)} per series (peer, all-GPU and NUMA "
        f"copies: {', '.join(format_size(s) for s in large)}); buffers of the largest size, two per GPU in device "
        f"memory within {DEVICE_SAFE_FRACTION:.0%} of the free memory, host buffers within "
        f"{HOST_SAFE_FRACTION:.0%} of MemAvailable; each size timed for about {timing['point_budget_s']:g} s "
        f"({MIN_COPIES}-{MAX_COPIES} copies after {WARMUP_COPIES} warm-up); {count} GPU(s)."
    )


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
