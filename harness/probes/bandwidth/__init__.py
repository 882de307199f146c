"""M1T1 memory bandwidth: a size sweep, the plateau (not the maximum), repeats with telemetry.

`python -m harness.probes.bandwidth [--size-mib N ...] [--repeats 3] [--kernel copy|read|triad|write]
[--read-kernel VARIANT] [--spec-gbps G] [--device auto|cuda|cpu]` writes one JSON document
(schemas/bandwidth.schema.json).

How it measures: three fp32 buffers of the largest size hold fresh random data; every smaller
size is a prefix view of them. Each point is warmed up, then timed one iteration at a time
(CUDA events on the GPU, perf_counter on the CPU) for about a time budget; the per-iteration
times are kept and their median gives the point's GB/s under the byte-counting rule in
harness.analysis.bandwidth.KERNELS. The largest size then runs --repeats more times (harness/probes/bandwidth/repeats.py);
during the middle repeat an NVML sampler records clocks, power, temperature, clock-event reasons and
processes; repeats that disagree by 5% or more are measured once more, longer.
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

from harness import catalogue
from harness.analysis.bandwidth import figures as analysis
from harness.probes.bandwidth import read_kernels
from harness.probes.bandwidth.device import (
    BUFFERS,
    check_sizes,
    cpu_cache,
    cpu_name,
    default_sizes,
    identify_gpu,
    largest_safe_mib,
    meminfo_bytes,
    nvml_handle,
    pick_device,
)
from harness.probes.bandwidth.document import assemble
from harness.probes.bandwidth.points import (
    ELEMENT_BYTES,
    Timer,
    kernel_fn,
    per_call,
    point_record,
    timed,
)
from harness.probes.bandwidth.repeats import REPEAT_BUDGET_S, Repeats
from harness.probes.contract import (
    Option,
    ProbeUsageError,
    attempt,
    check_options,
    options_parser,
    positive,
    probe_main,
    progress,
    real,
    unavailable,
)
from harness.probes.nvml import NvmlSession
from harness.probes.policy import at_most, matching, take
from harness.probes.timing import Clock

NAME = "bandwidth"
POINT_BUDGET_S = {"cuda": 0.3, "cpu": 0.1}
EMPTY_LAUNCH_ITERATIONS = 200


def known_sku(sku_id: str) -> str | None:
    """A check: SKU_ID is in the catalogue."""
    if catalogue.by_id(sku_id) is None:
        return f"{sku_id}: not in the catalogue; known: " + ", ".join(s["id"] for s in catalogue.skus())
    return None


OPTIONS = (
    Option(
        ("--size-mib",),
        dict(
            type=real,
            nargs="+",
            metavar="N",
            help="buffer sizes in MiB (default: 4 64 256 1024 and larger powers of two up to "
            "the largest safe size on a GPU; 1 4 16 64 128 on the CPU)",
        ),
        check=lambda sizes: next(
            (
                f"{s:g}: sizes must be positive (MiB per buffer, e.g. --size-mib 4 64 256 1024)"
                for s in sizes
                if not s > 0
            ),
            None,
        ),
        replay=take(at_most(256 * 1024, "MiB")),
    ),
    Option(
        ("--repeats",),
        dict(type=int, default=3, help="runs of the largest size (default: 3)"),
        check=lambda n: None if n >= 1 else f"{n}: at least 1 (the lab asks for 3)",
        replay=take(at_most(100)),
    ),
    Option(
        ("--spec-gbps",),
        dict(type=real, metavar="GBPS", help="published peak bandwidth in GB/s (overrides the catalogue's figure)"),
        check=positive,
        replay=take(at_most(100_000, "GB/s")),
    ),
    Option(
        ("--kernel",),
        dict(
            choices=sorted(analysis.KERNELS),
            default="copy",
            help="access pattern: "
            + "; ".join(f"{k} reads {v['reads']} writes {v['writes']}" for k, v in sorted(analysis.KERNELS.items()))
            + " (default: copy)",
        ),
        replay=take(),
    ),
    Option(
        ("--read-kernel",),
        dict(
            choices=read_kernels.NAMES,
            metavar="VARIANT",
            help=f"with --kernel read: how the buffer is read (default: {read_kernels.DEFAULTS['cuda']} on a GPU, "
            f"{read_kernels.DEFAULTS['cpu']} on a CPU); "
            + "; ".join(f"{name}: {text}" for name, text in read_kernels.DESCRIPTIONS.items() if "nvrtc" not in name)
            + "; nvrtc-vVuUtTbB[-s2][-cs] (CUDA only): a kernel compiled by NVRTC, float V loads, U in flight per "
            "thread, B blocks of T threads per SM, s2 the buffer read as two halves at once, cs cache-streaming "
            "loads; one of " + ", ".join(n for n in read_kernels.NAMES if "nvrtc" in n),
        ),
        replay=take(),  # one of the names this build compiles (choices)
    ),
    Option(
        ("--device",),
        dict(
            choices=["auto", "cuda", "cpu"],
            default="auto",
            help="auto: the GPU when torch sees one, else host memory (default: auto)",
        ),
        replay=take(),
    ),
    Option(
        ("--device-index",),
        dict(type=int, default=0, help="CUDA device index (default: 0)"),
        replay=take(at_most(1023)),
    ),
    Option(
        ("--point-budget-s",),
        dict(
            type=real, metavar="SECONDS", help="timed seconds per sweep point (default: 0.3 on a GPU, 0.1 on the CPU)"
        ),
        check=positive,
        replay=take(at_most(60, "s")),
    ),
    Option(
        ("--repeat-budget-s",),
        dict(
            type=real,
            metavar="SECONDS",
            help="timed seconds per repeat of the largest size (default: 1, on a GPU and on the CPU); repeats "
            "that vary by 5%% or more are measured once more, 4 x longer",
        ),
        check=positive,
        replay=take(at_most(60, "s")),
    ),
    Option(
        ("--compare-sku",),
        dict(
            metavar="SKU_ID",
            help="compare with this catalogue SKU's known-good result; refused unless it is "
            "the device's own SKU, capacity and form factor (default: the device's own)",
        ),
        check=known_sku,
        replay=take(matching("[a-z0-9-]{1,64}", "a catalogue SKU id")),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__.split("\n\n")[0], OPTIONS)


# --- measure -----------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Any]:
    check_options(args, OPTIONS)
    if args.read_kernel is not None and args.kernel != "read":
        raise ProbeUsageError(f"--read-kernel {args.read_kernel}: only with --kernel read (not {args.kernel})")
    import torch

    device = pick_device(torch, args.device)
    with NvmlSession() as nvml:
        return Measurement(torch, device, args, nvml).run()


class Measurement:
    """One probe run: device facts, sweep, repeats, reference. Holds no global state."""

    def __init__(self, torch: Any, device: str, args: argparse.Namespace, nvml: NvmlSession) -> None:
        self.torch, self.device, self.args, self.nvml = torch, device, args, nvml
        self.kernel = args.kernel
        self.read: read_kernels.Variants | None = None  # the read kernel's variant (--kernel read)
        self.limitations: list[dict[str, str]] = []
        self.handle: Any = None

    def device_facts(self) -> dict[str, Any]:
        torch = self.torch
        if self.device == "cpu":
            total, free = meminfo_bytes("MemTotal"), meminfo_bytes("MemAvailable")
            return {
                "name": cpu_name(),
                "total": total,
                "free": free,
                "where": "host memory",
                "cache": cpu_cache(),
                "torch_threads": torch.get_num_threads(),
            }
        index = self.args.device_index
        if not 0 <= index < torch.cuda.device_count():
            raise ProbeUsageError(f"--device-index {index}: torch sees {torch.cuda.device_count()} device(s)")
        torch.cuda.set_device(index)
        props = torch.cuda.get_device_properties(index)
        free, total = torch.cuda.mem_get_info(index)
        l2 = getattr(props, "L2_cache_size", None)
        cache = (
            {
                "level": "L2",
                "size_bytes": l2,
                "size_mib": l2 / 2**20,
                "source": f"torch.cuda.get_device_properties({index}).L2_cache_size",
            }
            if isinstance(l2, int) and l2 > 0
            else {
                "level": "L2",
                "size_bytes": unavailable("torch reports no L2_cache_size"),
                "size_mib": unavailable("torch reports no L2_cache_size"),
                "source": "torch",
            }
        )
        return {
            "name": props.name,
            "total": total,
            "free": free,
            "where": f"cuda:{index}",
            "cache": cache,
            "torch_threads": torch.get_num_threads(),
        }

    def run(self) -> dict[str, Any]:
        torch, args = self.torch, self.args
        facts = self.device_facts()
        safe_mib = largest_safe_mib(facts["free"])
        sizes = sorted(set(args.size_mib)) if args.size_mib else default_sizes(self.device, safe_mib)
        if not sizes:
            raise ProbeUsageError(f"no default size fits: the largest safe size is {safe_mib:.1f} MiB")
        check_sizes(sizes, facts["total"], facts["free"], facts["where"])
        identity, telemetry_reason = self.open_telemetry()
        timer = per_call(Clock.of(torch, self.device))
        budget = args.point_budget_s or POINT_BUDGET_S[self.device]
        repeat_budget = args.repeat_budget_s or max(budget, REPEAT_BUDGET_S[self.device])

        seed = int.from_bytes(os.urandom(4), "little")
        largest = max(sizes)
        n_max = int(largest * 2**20) // ELEMENT_BYTES
        generator = torch.Generator(device=self.device).manual_seed(seed)
        a, b, c = (
            torch.rand(n_max, dtype=torch.float32, device=self.device, generator=generator) for _ in range(BUFFERS)
        )
        out = torch.empty((), dtype=torch.float32, device=self.device)
        scalar = 0.25 + float(torch.rand(1, generator=generator, device=self.device).item())
        if self.kernel == "read":
            self.read = read_kernels.Variants(
                torch,
                args.read_kernel or read_kernels.DEFAULTS["cuda" if self.device.startswith("cuda") else "cpu"],
                self.device,
            )
            self.read.check(self.read.over(a, out), a)  # compiled (NVRTC) and checked before any timing
        empty_s, empty_times = self.empty_launch(timer)
        cache_bytes = facts["cache"]["size_bytes"] if isinstance(facts["cache"]["size_bytes"], int) else None

        total_steps = len(sizes) + args.repeats
        sweep = []
        for i, size in enumerate(sizes):
            progress(i, total_steps, f"{self.kernel} {size:g} MiB")
            n = int(size * 2**20) // ELEMENT_BYTES
            fn = kernel_fn(torch, self.kernel, a[:n], b[:n], c[:n], out, scalar, self.read)
            sweep.append(point_record(size, n, self.kernel, timed(fn, timer, budget), cache_bytes, empty_s))
        fn = kernel_fn(torch, self.kernel, a, b, c, out, scalar, self.read)
        repeats = Repeats(self, fn, largest, n_max, timer).measure(
            repeat_budget, cache_bytes, empty_s, len(sizes), total_steps, telemetry_reason
        )
        progress(total_steps, total_steps, "done")
        data = {
            "initialisation": "torch.rand (uniform [0, 1)) from a fresh random seed; never zeros",
            "seed": seed,
            "scalar": scalar,
        }
        document = self.document(facts, sizes, sweep, repeats, identity, empty_s, data, budget, repeat_budget, safe_mib)
        document["launch"]["empty_launch_times_s"] = empty_times  # so the median can be recomputed
        return document

    def open_telemetry(self) -> tuple[dict[str, Any] | None, str | None]:
        if self.device == "cpu":
            self.limitations.append(
                {
                    "what": "NVML telemetry during the middle repeat",
                    "why": "device=cpu: no GPU, nothing for NVML to sample",
                }
            )
            return None, "device=cpu: no GPU to sample"
        if not self.nvml.ok:
            self.limitations.append({"what": "SKU identification and telemetry", "why": str(self.nvml.reason)})
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

    def power_limit(self) -> float | None:
        value = attempt(lambda: self.nvml.pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0)
        return value if isinstance(value, float) else None

    def document(
        self,
        facts: dict[str, Any],
        sizes: list[float],
        sweep: list[dict[str, Any]],
        repeats: dict[str, Any],
        identity: dict[str, Any] | None,
        empty_s: float,
        data: dict[str, Any],
        budget: float,
        repeat_budget: float,
        safe_mib: float,
    ) -> dict[str, Any]:
        """This run's document (harness.probes.bandwidth.document)."""
        return assemble(self, facts, sizes, sweep, repeats, identity, empty_s, data, budget, repeat_budget, safe_mib)


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
