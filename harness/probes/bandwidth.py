"""M1T1 memory bandwidth: a size sweep, the plateau (not the maximum), repeats with telemetry.

`python -m harness.probes.bandwidth [--size-mib N ...] [--repeats 3] [--kernel copy|read|triad|write]
[--spec-gbps G] [--device auto|cuda|cpu]` writes one JSON document (schemas/bandwidth.schema.json).

How it measures: three fp32 buffers of the largest size hold fresh random data; every smaller
size is a prefix view of them. Each point is warmed up, then timed one iteration at a time
(CUDA events on the GPU, perf_counter on the CPU) for about a time budget; the per-iteration
times are kept and their median gives the point's GB/s under the byte-counting rule in
harness.analysis.bandwidth.KERNELS. The largest size then runs --repeats more times; during the
middle repeat an NVML sampler records clocks, power, temperature, clock-event reasons and
processes.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import catalogue
from harness.analysis import bandwidth as analysis
from harness.analysis.device_mapping import normalise_uuid
from harness.analysis.verdict import Verdict
from harness.probes.contract import (Option, ProbeUsageError, add_options, attempt, check_options, positive,
                                     probe_main, progress, unavailable)
from harness.probes._nvml import NvmlSession, Sampler, handle_by_uuid, sample

NAME = "bandwidth"
SAFE_FRACTION = 0.5  # three buffers within half of the memory free at start
BUFFERS = 3
DTYPE_NAME, ELEMENT_BYTES = "float32", 4
CUDA_SWEEP_MIB = (4, 64, 256, 1024)  # then powers of two up to the largest safe size
CPU_SWEEP_MIB = (1, 4, 16, 64, 128)  # small on purpose: CI runners have 2 cores
POINT_BUDGET_S = {"cuda": 0.3, "cpu": 0.1}
REPEAT_BUDGET_S = {"cuda": 1.0, "cpu": 0.1}  # cuda: >= 10 NVML samples at 50 ms in the middle one
WARMUP_ITERATIONS = 3
MIN_ITERATIONS, MAX_ITERATIONS = 10, 500
EMPTY_LAUNCH_ITERATIONS = 200
SAMPLE_INTERVAL_S, MIN_SAMPLES = 0.05, 10

Timer = Callable[[Callable[[], Any], int], list[float]]


def known_sku(sku_id: str) -> str | None:
    """A check: SKU_ID is in the catalogue."""
    if catalogue.by_id(sku_id) is None:
        return f"{sku_id}: not in the catalogue; known: " + ", ".join(s["id"] for s in catalogue.skus())
    return None


OPTIONS = (
    Option(("--size-mib",), dict(type=float, nargs="+", metavar="N",
                                 help="buffer sizes in MiB (default: 4 64 256 1024 and larger powers of two up to "
                                      "the largest safe size on a GPU; 1 4 16 64 128 on the CPU)"),
           check=lambda sizes: next((f"{s:g}: sizes must be positive (MiB per buffer, e.g. --size-mib 4 64 256 1024)"
                                     for s in sizes if not s > 0), None)),
    Option(("--repeats",), dict(type=int, default=3, help="runs of the largest size (default: 3)"),
           check=lambda n: None if n >= 1 else f"{n}: at least 1 (the lab asks for 3)"),
    Option(("--spec-gbps",), dict(type=float, metavar="GBPS",
                                  help="published peak bandwidth in GB/s (overrides the catalogue's figure)"),
           check=positive),
    Option(("--kernel",), dict(choices=sorted(analysis.KERNELS), default="copy",
                               help="access pattern: " + "; ".join(f"{k} reads {v['reads']} writes {v['writes']}"
                                                                   for k, v in sorted(analysis.KERNELS.items()))
                                    + " (default: copy)")),
    Option(("--device",), dict(choices=["auto", "cuda", "cpu"], default="auto",
                               help="auto: the GPU when torch sees one, else host memory (default: auto)")),
    Option(("--device-index",), dict(type=int, default=0, help="CUDA device index (default: 0)")),
    Option(("--point-budget-s",), dict(type=float, metavar="SECONDS",
                                       help="timed seconds per sweep point (default: 0.3 on a GPU, 0.1 on the CPU)"),
           check=positive),
    Option(("--compare-sku",), dict(metavar="SKU_ID",
                                    help="compare with this catalogue SKU's known-good result; refused unless it is "
                                         "the device's own SKU, capacity and form factor (default: the device's own)"),
           check=known_sku),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bandwidth", description=__doc__.split("\n\n")[0])
    add_options(parser, OPTIONS)
    return parser


# --- timing ------------------------------------------------------------------------------------

def cuda_timer(torch: Any) -> Timer:
    """Per-iteration times from CUDA event pairs; one synchronisation at the end."""
    def run(fn: Callable[[], Any], n: int) -> list[float]:
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(n)]
        for start, end in pairs:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in pairs]
    return run


def cpu_timer(fn: Callable[[], Any], n: int) -> list[float]:
    """Per-iteration wall times on the host."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def timed(fn: Callable[[], Any], timer: Timer, budget_s: float,
          enough: Callable[[], bool] = lambda: True) -> list[float]:
    """Warm up, size the iteration count to the budget, time; extend until `enough()`."""
    estimate = statistics.median(timer(fn, WARMUP_ITERATIONS))
    n = max(MIN_ITERATIONS, min(MAX_ITERATIONS, math.ceil(budget_s / max(estimate, 1e-9))))
    times = timer(fn, n)
    while not enough() and len(times) < 20 * MAX_ITERATIONS:
        times += timer(fn, max(1, n // 4))
    return times


# --- devices -----------------------------------------------------------------------------------

def pick_device(torch: Any, requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise ProbeUsageError("--device cuda: torch sees no CUDA device "
                              f"(torch {torch.__version__}, CUDA build {torch.version.cuda})")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def meminfo_bytes(field: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"/proc/meminfo has no {field}")


def cpu_cache() -> dict[str, Any]:
    """The last-level cache from sysfs (the host's counterpart of a GPU's L2)."""
    best: tuple[int, int] | None = None
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
            size = int(text[:-1]) * {"K": 2**10, "M": 2**20, "G": 2**30}[text[-1]] if text[-1].isalpha() else int(text)
        except (OSError, ValueError, KeyError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    if best is None:
        return {"level": "LLC", "size_bytes": unavailable("no cache sizes under /sys/devices/system/cpu/cpu0/cache"),
                "size_mib": unavailable("no cache sizes in sysfs"), "source": "sysfs"}
    return {"level": f"L{best[0]}", "size_bytes": best[1], "size_mib": best[1] / 2**20,
            "source": f"/sys/devices/system/cpu/cpu0/cache (L{best[0]}, the last level; shared by all cores)"}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "host CPU (model name not readable from /proc/cpuinfo)"


# --- sizing ------------------------------------------------------------------------------------

def largest_safe_mib(free_bytes: int) -> float:
    return free_bytes * SAFE_FRACTION / BUFFERS / 2**20


def default_sizes(device: str, safe_mib: float) -> list[float]:
    if device == "cpu":
        return [s for s in CPU_SWEEP_MIB if s <= safe_mib]
    sizes = [s for s in CUDA_SWEEP_MIB if s <= safe_mib]
    power = 2048
    while power <= safe_mib:
        sizes.append(power)
        power *= 2
    return sizes


def check_sizes(sizes: list[float], total_bytes: int, free_bytes: int, where: str) -> None:
    """Clear errors for sizes the device cannot hold."""
    for size in sizes:
        if not size > 0:
            raise ProbeUsageError(f"--size-mib {size:g}: sizes must be positive")
        if size * 2**20 < ELEMENT_BYTES:
            raise ProbeUsageError(f"--size-mib {size:g}: smaller than one {DTYPE_NAME} element")
        need = BUFFERS * size * 2**20
        if need > total_bytes:
            raise ProbeUsageError(f"--size-mib {size:.10g}: {BUFFERS} buffers need {need / 2**20:.0f} MiB "
                                  f"but {where} has {total_bytes / 2**20:.0f} MiB in all")
        if size > largest_safe_mib(free_bytes):
            raise ProbeUsageError(f"--size-mib {size:.10g}: above the largest safe size "
                                  f"{largest_safe_mib(free_bytes):.0f} MiB ({BUFFERS} buffers within "
                                  f"{SAFE_FRACTION:.0%} of the {free_bytes / 2**20:.0f} MiB free on {where})")


# --- kernels -----------------------------------------------------------------------------------

def kernel_fn(torch: Any, kernel: str, a: Any, b: Any, c: Any, out: Any, scalar: float) -> Callable[[], Any]:
    """The torch call for one kernel on prefix views a, b, c (see analysis.KERNELS)."""
    if kernel == "copy":
        return lambda: c.copy_(a)
    if kernel == "read":
        return lambda: torch.sum(a, dim=(0,), out=out)  # torch 2.11 has no out= form without dim
    if kernel == "triad":
        return lambda: torch.add(b, c, alpha=scalar, out=a)
    if kernel == "write":
        return lambda: a.fill_(scalar)
    raise ProbeUsageError(f"unknown kernel {kernel!r}; choose from {', '.join(sorted(analysis.KERNELS))}")


def point_record(size_mib: float, elements: int, kernel: str, times: list[float],
                 cache_bytes: float | None, empty_s: float | None) -> dict[str, Any]:
    buffer_bytes = elements * ELEMENT_BYTES
    nbytes = analysis.bytes_per_iteration(kernel, buffer_bytes)
    median_s = statistics.median(times)
    marks, why = analysis.classify(median_s, nbytes, cache_bytes, empty_s)
    return {"size_mib": size_mib, "elements": elements, "buffer_bytes": buffer_bytes,
            "bytes_per_iteration": nbytes, "iterations": len(times),
            "warmup_iterations": WARMUP_ITERATIONS, "iteration_times_s": times,
            "median_s": median_s, "min_s": min(times), "max_s": max(times),
            "median_gbps": analysis.gbps(nbytes, median_s), "marks": marks, "why": why,
            "bytes_vs_cache": nbytes / cache_bytes if cache_bytes else None}


# --- the GPU's identity and telemetry ----------------------------------------------------------

def nvml_handle(nvml: NvmlSession, torch: Any, index: int) -> tuple[Any, str]:
    """The NVML handle of torch's device `index`, matched by UUID (CUDA_VISIBLE_DEVICES reorders),
    or an unavailable field saying why: never a guess by position, which could name another GPU."""
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return unavailable(f"torch gave no UUID for cuda:{index}, so no NVML device can be matched to it"), ""
    handle = handle_by_uuid(nvml, str(uuid))
    return handle, ("" if isinstance(handle, dict) else f"by UUID {normalise_uuid(str(uuid))}")


def identify_gpu(nvml: NvmlSession, handle: Any) -> dict[str, Any]:
    p = nvml.pynvml
    pci = attempt(lambda: p.nvmlDeviceGetPciInfo(handle).pciDeviceId)
    memory = attempt(lambda: p.nvmlDeviceGetMemoryInfo(handle).total / 2**20)
    power = attempt(lambda: p.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
    facts = {"pci_device_id": f"{pci:#010x}" if isinstance(pci, int) else pci,
             "memory_total_mib": memory, "power_limit_w": power}
    if not isinstance(pci, int):
        return {**facts, "sku_id": None, "evidence": f"no PCI device id: {pci['unavailable']}"}
    found = catalogue.identify(pci, memory if isinstance(memory, float) else None,
                               power if isinstance(power, float) else None)
    return {**facts, "sku_id": found.sku_id, "evidence": found.evidence}


def own_pids(snapshot: dict[str, Any], allocated_mib: float) -> tuple[list[int], str]:
    """Which NVML-listed pids are this probe: our pid, or (in another pid namespace) our allocation."""
    procs = snapshot.get("processes")
    if not isinstance(procs, list):
        return [os.getpid()], "NVML process list unavailable; assumed our own pid"
    if any(p["pid"] == os.getpid() for p in procs):
        return [os.getpid()], "our pid is visible to NVML"
    big = [p["pid"] for p in procs if isinstance(p.get("used_memory_mib"), (int, float))
           and p["used_memory_mib"] >= 0.9 * allocated_mib]
    if len(big) == 1:
        return big, (f"our pid {os.getpid()} is not in NVML's list (another pid namespace); pid {big[0]} "
                     f"holds at least 90% of our {allocated_mib:.0f} MiB allocation")
    return [os.getpid()], (f"our pid {os.getpid()} is not in NVML's list and no single process holds our "
                           "allocation: every listed process counts as another")


# --- reference: published peak and known-good -------------------------------------------------

def reference(device: str, identity: dict[str, Any] | None, spec_gbps: float | None,
              compare_sku: str | None, kernel: str) -> dict[str, Any]:
    if device == "cpu":
        ref = {"sku_id": None, "identification": "device=cpu: the GPU catalogue has no reference for host memory",
               "known_good": None, "known_good_gbps": None, "comparable": False,
               "why": "device=cpu: the catalogue has no reference for host memory"}
    else:
        sku_id = identity["sku_id"] if identity else None
        ref = {"sku_id": sku_id, "identification": identity["evidence"] if identity else
               "NVML unavailable: the SKU cannot be identified", "known_good": None, "known_good_gbps": None}
        ok, why = catalogue.comparable(sku_id, compare_sku or sku_id)
        entry = catalogue.primary_known_good(catalogue.by_id(sku_id), "hbm_bandwidth", kernel=kernel) if ok else None
        if ok and entry is None:
            ok, why = False, f"{sku_id} has no primary known-good result for the {kernel} kernel"
        ref.update(comparable=ok, why=why, known_good=entry, known_good_gbps=entry["value"] if entry else None)
    if spec_gbps is not None:
        ref.update(spec_gbps=spec_gbps, spec_source="--spec-gbps")
    elif ref["sku_id"]:
        published = catalogue.by_id(ref["sku_id"])["published"]
        ref.update(spec_gbps=published["memory_bandwidth_gbps"], spec_source=f"catalogue: {published['source']}")
    else:
        ref.update(spec_gbps=None, spec_source="none: no --spec-gbps and no catalogue SKU")
    return ref


# --- measure -----------------------------------------------------------------------------------

def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_options(args, OPTIONS)
    import torch

    device = pick_device(torch, args.device)
    with NvmlSession() as nvml:
        return Measurement(torch, device, args, nvml).run()


class Measurement:
    """One probe run: device facts, sweep, repeats, reference. Holds no global state."""

    def __init__(self, torch: Any, device: str, args: argparse.Namespace, nvml: NvmlSession) -> None:
        self.torch, self.device, self.args, self.nvml = torch, device, args, nvml
        self.kernel = args.kernel
        self.limitations: list[dict[str, str]] = []
        self.handle: Any = None

    def device_facts(self) -> dict[str, Any]:
        torch = self.torch
        if self.device == "cpu":
            total, free = meminfo_bytes("MemTotal"), meminfo_bytes("MemAvailable")
            return {"name": cpu_name(), "total": total, "free": free, "where": "host memory",
                    "cache": cpu_cache(), "torch_threads": torch.get_num_threads()}
        index = self.args.device_index
        if not 0 <= index < torch.cuda.device_count():
            raise ProbeUsageError(f"--device-index {index}: torch sees {torch.cuda.device_count()} device(s)")
        torch.cuda.set_device(index)
        props = torch.cuda.get_device_properties(index)
        free, total = torch.cuda.mem_get_info(index)
        l2 = getattr(props, "L2_cache_size", None)
        cache = ({"level": "L2", "size_bytes": l2, "size_mib": l2 / 2**20,
                  "source": f"torch.cuda.get_device_properties({index}).L2_cache_size"} if isinstance(l2, int) and l2 > 0
                 else {"level": "L2", "size_bytes": unavailable("torch reports no L2_cache_size"),
                       "size_mib": unavailable("torch reports no L2_cache_size"), "source": "torch"})
        return {"name": props.name, "total": total, "free": free, "where": f"cuda:{index}",
                "cache": cache, "torch_threads": torch.get_num_threads()}

    def run(self) -> dict[str, Any]:
        torch, args = self.torch, self.args
        facts = self.device_facts()
        safe_mib = largest_safe_mib(facts["free"])
        sizes = sorted(set(args.size_mib)) if args.size_mib else default_sizes(self.device, safe_mib)
        if not sizes:
            raise ProbeUsageError(f"no default size fits: the largest safe size is {safe_mib:.1f} MiB")
        check_sizes(sizes, facts["total"], facts["free"], facts["where"])
        identity, telemetry_reason = self.open_telemetry()
        timer = cuda_timer(torch) if self.device == "cuda" else cpu_timer
        budget = args.point_budget_s or POINT_BUDGET_S[self.device]
        repeat_budget = max(budget, REPEAT_BUDGET_S[self.device])

        seed = int.from_bytes(os.urandom(4), "little")
        largest = max(sizes)
        n_max = int(largest * 2**20) // ELEMENT_BYTES
        generator = torch.Generator(device=self.device).manual_seed(seed)
        a, b, c = (torch.rand(n_max, dtype=torch.float32, device=self.device, generator=generator)
                   for _ in range(BUFFERS))
        out = torch.empty((), dtype=torch.float32, device=self.device)
        scalar = 0.25 + float(torch.rand(1, generator=generator, device=self.device).item())
        empty_s, empty_times = self.empty_launch(timer)
        cache_bytes = facts["cache"]["size_bytes"] if isinstance(facts["cache"]["size_bytes"], int) else None

        total_steps = len(sizes) + args.repeats
        sweep = []
        for i, size in enumerate(sizes):
            progress(i, total_steps, f"{self.kernel} {size:g} MiB")
            n = int(size * 2**20) // ELEMENT_BYTES
            fn = kernel_fn(torch, self.kernel, a[:n], b[:n], c[:n], out, scalar)
            sweep.append(point_record(size, n, self.kernel, timed(fn, timer, budget), cache_bytes, empty_s))
        fn = kernel_fn(torch, self.kernel, a, b, c, out, scalar)
        repeats = self.repeats(fn, largest, n_max, timer, repeat_budget, cache_bytes, empty_s,
                               len(sizes), total_steps, telemetry_reason)
        progress(total_steps, total_steps, "done")
        data = {"initialisation": "torch.rand (uniform [0, 1)) from a fresh random seed; never zeros",
                "seed": seed, "scalar": scalar}
        document = self.document(facts, sizes, sweep, repeats, identity, empty_s, data, budget, repeat_budget,
                                 safe_mib)
        document["launch"]["empty_launch_times_s"] = empty_times  # so the median can be recomputed
        return document

    def open_telemetry(self) -> tuple[dict[str, Any] | None, str | None]:
        if self.device == "cpu":
            self.limitations.append({"what": "NVML telemetry during the middle repeat",
                                     "why": "device=cpu: no GPU, nothing for NVML to sample"})
            return None, "device=cpu: no GPU to sample"
        if not self.nvml.ok:
            self.limitations.append({"what": "SKU identification and telemetry", "why": self.nvml.reason})
            return None, self.nvml.reason
        handle, how = nvml_handle(self.nvml, self.torch, self.args.device_index)
        if isinstance(handle, dict):
            self.limitations.append({"what": "SKU identification and telemetry", "why": handle["unavailable"]})
            return None, handle["unavailable"]
        self.handle = handle
        identity = identify_gpu(self.nvml, self.handle)
        identity["nvml_handle"] = how
        return identity, None

    def empty_launch(self, timer: Timer) -> tuple[float, list[float]]:
        """The median time of a one-element in-place add after 10 untimed ones, and its times."""
        tiny = self.torch.rand(1, device=self.device)
        timer(lambda: tiny.add_(1.0), 10)
        times = timer(lambda: tiny.add_(1.0), EMPTY_LAUNCH_ITERATIONS)
        return statistics.median(times), times

    def repeats(self, fn: Callable[[], Any], size: float, n: int, timer: Timer, budget: float,
                cache_bytes: float | None, empty_s: float, done: int, total: int,
                telemetry_reason: str | None) -> dict[str, Any]:
        """The largest size --repeats times; NVML samples during the middle one."""
        middle = self.args.repeats // 2
        runs, samples, owners = [], None, ([os.getpid()], "no telemetry")
        for r in range(self.args.repeats):
            progress(done + r, total, f"repeat {r + 1}/{self.args.repeats} at {size:g} MiB")
            if r == middle and self.handle is not None:
                owners = own_pids(sample(self.nvml.pynvml, self.handle), BUFFERS * size)
                with Sampler(self.nvml.pynvml, self.handle, SAMPLE_INTERVAL_S) as sampler:
                    times = timed(fn, timer, budget, enough=lambda: len(sampler.samples) >= MIN_SAMPLES - 1)
                samples = sampler.samples
            else:
                times = timed(fn, timer, budget)
            runs.append(point_record(size, n, self.kernel, times, cache_bytes, empty_s))
        medians = [run["median_gbps"] for run in runs]
        spread = analysis.spread(medians)
        verdict = analysis.repeat_verdict(spread)
        telemetry = ({"repeat_index": middle, "interval_s": SAMPLE_INTERVAL_S, "samples": samples,
                      "own_pids": owners[0], "own_pids_how": owners[1]} if samples is not None
                     else {"repeat_index": middle, "interval_s": SAMPLE_INTERVAL_S,
                           "samples": unavailable(telemetry_reason or "no NVML handle"),
                           "own_pids": owners[0], "own_pids_how": owners[1]})
        diagnosis = None
        if verdict == Verdict.FAIL:
            diagnosis = (analysis.diagnose(samples, owners[0], self.power_limit()) if samples is not None
                         else {"causes": [], "summary": "no telemetry to diagnose from "
                                                       f"({telemetry['samples']['unavailable']})"})
        return {"size_mib": size, "count": self.args.repeats, "runs": runs, "medians_gbps": medians,
                "spread": spread, "spread_max": analysis.REPEAT_SPREAD_MAX, "verdict": verdict,
                "trusted": verdict == Verdict.PASS, "telemetry": telemetry, "diagnosis": diagnosis}

    def power_limit(self) -> float | None:
        value = attempt(lambda: self.nvml.pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0)
        return value if isinstance(value, float) else None

    def document(self, facts: dict[str, Any], sizes: list[float], sweep: list[dict[str, Any]],
                 repeats: dict[str, Any], identity: dict[str, Any] | None, empty_s: float, data: dict[str, Any],
                 budget: float, repeat_budget: float, safe_mib: float) -> dict[str, Any]:
        points = [{"size_mib": p["size_mib"], "gbps": p["median_gbps"], "marks": p["marks"], "why": p["why"]}
                  for p in sweep]
        found = analysis.plateau(points)
        top = max(points, key=lambda p: p["gbps"])
        ref = reference(self.device, identity, self.args.spec_gbps, self.args.compare_sku, self.kernel)
        ref["known_good_ratio"] = (found["gbps"] / ref["known_good_gbps"]
                                   if found["gbps"] is not None and ref["known_good_gbps"] else None)
        ref["spec_ratio"] = (found["gbps"] / ref["spec_gbps"]
                             if found["gbps"] is not None and ref["spec_gbps"] else None)
        if not found["reached"]:
            self.limitations.append({"what": "bandwidth plateau", "why": found["why"]})
        if self.device == "cpu":
            self.limitations.append({"what": "HBM bandwidth", "why": "device=cpu: this measures host memory "
                                     "through torch on the CPU; writes may also cost a read (write-allocate), "
                                     "which the byte count does not include"})
        spec = analysis.KERNELS[self.kernel]
        return {
            "device": self.device,
            "device_name": facts["name"],
            "device_identity": identity if identity is not None else unavailable(
                "device=cpu: no PCI identity" if self.device == "cpu" else self.nvml.reason or "no NVML"),
            "torch_version": self.torch.__version__,
            "torch_threads": facts["torch_threads"],
            "kernel": self.kernel,
            "dtype": DTYPE_NAME,
            "byte_counting": {"rule": analysis.BYTE_RULE, "reads": spec["reads"], "writes": spec["writes"],
                              "element_bytes": ELEMENT_BYTES, "gb_bytes": 10**9, "torch_op": spec["torch_op"],
                              "kernels": analysis.KERNELS},
            "data": data,
            "cache": facts["cache"],
            "launch": {"empty_launch_s": empty_s, "launch_bound_factor": analysis.LAUNCH_BOUND_FACTOR,
                       "rule": analysis.LAUNCH_RULE, "cache_rule": analysis.CACHE_RULE},
            "timing": {"method": "cuda_events" if self.device == "cuda" else "perf_counter",
                       "statistic": "median of per-iteration times", "warmup_iterations": WARMUP_ITERATIONS,
                       "point_budget_s": budget, "repeat_budget_s": repeat_budget,
                       "min_iterations": MIN_ITERATIONS, "max_iterations": MAX_ITERATIONS},
            "memory": {"total_mib": facts["total"] / 2**20, "free_mib": facts["free"] / 2**20,
                       "safe_fraction": SAFE_FRACTION, "buffers": BUFFERS, "largest_safe_size_mib": safe_mib,
                       "rule": f"{BUFFERS} buffers of the largest size within {SAFE_FRACTION:.0%} of the "
                               f"memory free at start"},
            "sweep": sweep,
            "plateau": {"tolerance": analysis.PLATEAU_TOLERANCE, "rule": analysis.PLATEAU_RULE,
                        "reached": found["reached"], "sizes_mib": found["sizes_mib"] if found["reached"] else [],
                        "gbps": found["gbps"], "why": found["why"],
                        "maximum": {"size_mib": top["size_mib"], "gbps": top["gbps"],
                                    "note": "the highest point, shown only to say it is not the answer"},
                        "off_plateau": analysis.explain_off_plateau(points, found["gbps"],
                                                                    found["sizes_mib"] if found["reached"] else [])},
            "repeats": repeats,
            "reference": ref,
            "sizing": self.sizing(facts, sizes, budget, repeat_budget, safe_mib),
            "limitations": self.limitations,
        }

    def sizing(self, facts: dict[str, Any], sizes: list[float], budget: float, repeat_budget: float,
               safe_mib: float) -> str:
        largest = max(sizes)
        common = (f"sweep {' '.join(f'{s:g}' for s in sizes)} MiB per buffer; {BUFFERS} {DTYPE_NAME} buffers "
                  f"of the largest size ({BUFFERS * largest:g} MiB) stay within {SAFE_FRACTION:.0%} of the "
                  f"{facts['free'] / 2**20:.0f} MiB free at start (largest safe size {safe_mib:.0f} MiB); "
                  f"each point is timed for about {budget:g} s ({MIN_ITERATIONS}-{MAX_ITERATIONS} iterations "
                  f"after {WARMUP_ITERATIONS} warm-up), each of the {self.args.repeats} repeats for about "
                  f"{repeat_budget:g} s")
        if self.device == "cpu":
            return (f"device=cpu ({facts['name']}, {facts['torch_threads']} torch threads): host memory, "
                    f"sized small for 2-core CI runners by default; {common}.")
        return (f"{facts['name']} ({facts['where']}): {common}, long enough for at least {MIN_SAMPLES} NVML "
                f"samples at {SAMPLE_INTERVAL_S * 1000:.0f} ms during the middle repeat.")


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
