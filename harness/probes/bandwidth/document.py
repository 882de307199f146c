"""The bandwidth probe's document: what one run measured (the sweep, the repeats), the plateau found in
the sweep, the reference it is compared with, and the rules each figure was taken by."""

from __future__ import annotations

from typing import Any

from harness.analysis.bandwidth import figures as analysis
from harness.probes.bandwidth import read_kernels
from harness.probes.bandwidth.device import BUFFERS, SAFE_FRACTION, reference
from harness.probes.bandwidth.points import DTYPE_NAME, ELEMENT_BYTES, MAX_ITERATIONS, MIN_ITERATIONS, WARMUP_ITERATIONS
from harness.probes.bandwidth.sizing import sizing
from harness.probes.contract import unavailable


def assemble(
    measurement: Any,
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
    """The document of one run: MEASUREMENT (harness.probes.bandwidth.Measurement) holds the device, the
    kernel, the arguments, the NVML session and the limitations found so far (this adds its own)."""
    m = measurement
    points = [
        {"size_mib": p["size_mib"], "gbps": p["median_gbps"], "marks": p["marks"], "why": p["why"]} for p in sweep
    ]
    found = analysis.plateau(points)
    ref = reference_of(m, identity, found["gbps"])
    m.limitations.extend(limitations_of(m.device, found))
    return {
        "device": m.device,
        "device_name": facts["name"],
        "device_identity": identity
        if identity is not None
        else unavailable("device=cpu: no PCI identity" if m.device == "cpu" else m.nvml.reason or "no NVML"),
        "torch_version": m.torch.__version__,
        "torch_threads": facts["torch_threads"],
        "kernel": m.kernel,
        "dtype": DTYPE_NAME,
        "byte_counting": byte_counting(m.kernel, m.read),
        "data": data,
        "cache": facts["cache"],
        "launch": {
            "empty_launch_s": empty_s,
            "launch_bound_factor": analysis.LAUNCH_BOUND_FACTOR,
            "rule": analysis.LAUNCH_RULE,
            "cache_rule": analysis.CACHE_RULE,
        },
        "timing": timing(m.device, budget, repeat_budget),
        "memory": memory(facts, safe_mib),
        "sweep": sweep,
        "plateau": plateau(points, found),
        "repeats": repeats,
        "reference": ref,
        "sizing": sizing(m.device, m.args.repeats, facts, sizes, budget, repeat_budget, safe_mib),
        "limitations": m.limitations,
    }


def reference_of(measurement: Any, identity: dict[str, Any] | None, gbps: float | None) -> dict[str, Any]:
    """The reference the plateau's GBPS is compared with, and its ratios to the known-good and spec figures."""
    m = measurement
    ref = reference(m.device, identity, m.args.spec_gbps, m.args.compare_sku, m.kernel)
    ref["known_good_ratio"] = gbps / ref["known_good_gbps"] if gbps is not None and ref["known_good_gbps"] else None
    ref["spec_ratio"] = gbps / ref["spec_gbps"] if gbps is not None and ref["spec_gbps"] else None
    return ref


def limitations_of(device: str, found: dict[str, Any]) -> list[dict[str, str]]:
    """What this run could not say: no plateau reached (FOUND), host memory measured on a CPU."""
    limitations = []
    if not found["reached"]:
        limitations.append({"what": "bandwidth plateau", "why": found["why"]})
    if device == "cpu":
        limitations.append(
            {
                "what": "HBM bandwidth",
                "why": "device=cpu: this measures host memory "
                "through torch on the CPU; writes may also cost a read (write-allocate), "
                "which the byte count does not include",
            }
        )
    return limitations


def byte_counting(kernel: str, read: read_kernels.Variants | None) -> dict[str, Any]:
    """How KERNEL's bytes are counted, and the read kernel's variant (READ) where it is the read kernel."""
    spec = analysis.KERNELS[kernel]
    return {
        "rule": analysis.BYTE_RULE,
        "reads": spec["reads"],
        "writes": spec["writes"],
        "element_bytes": ELEMENT_BYTES,
        "gb_bytes": 10**9,
        "torch_op": read.describe() if read else spec["torch_op"],
        "kernels": analysis.KERNELS,
        **({"read_kernel": {"variant": read.name, **read.facts}} if read else {}),
    }


def timing(device: str, budget: float, repeat_budget: float) -> dict[str, Any]:
    """How each point and repeat was timed."""
    return {
        "method": "cuda_events" if device == "cuda" else "perf_counter",
        "statistic": "median of per-iteration times",
        "warmup_iterations": WARMUP_ITERATIONS,
        "point_budget_s": budget,
        "repeat_budget_s": repeat_budget,
        "min_iterations": MIN_ITERATIONS,
        "max_iterations": MAX_ITERATIONS,
    }


def memory(facts: dict[str, Any], safe_mib: float) -> dict[str, Any]:
    """The memory at start (FACTS) and the largest size it let the sweep take (SAFE_MIB)."""
    return {
        "total_mib": facts["total"] / 2**20,
        "free_mib": facts["free"] / 2**20,
        "safe_fraction": SAFE_FRACTION,
        "buffers": BUFFERS,
        "largest_safe_size_mib": safe_mib,
        "rule": f"{BUFFERS} buffers of the largest size within {SAFE_FRACTION:.0%} of the memory free at start",
    }


def plateau(points: list[dict[str, Any]], found: dict[str, Any]) -> dict[str, Any]:
    """The plateau FOUND in the sweep's POINTS, the highest point beside it, and the points off it."""
    top = max(points, key=lambda p: p["gbps"])
    return {
        "tolerance": analysis.PLATEAU_TOLERANCE,
        "rule": analysis.PLATEAU_RULE,
        "reached": found["reached"],
        "sizes_mib": found["sizes_mib"] if found["reached"] else [],
        "gbps": found["gbps"],
        "why": found["why"],
        "maximum": {
            "size_mib": top["size_mib"],
            "gbps": top["gbps"],
            "note": "the highest point, shown only to say it is not the answer",
        },
        "off_plateau": analysis.explain_off_plateau(
            points, found["gbps"], found["sizes_mib"] if found["reached"] else []
        ),
    }
