"""One transfer series (one copy kind on one stream, swept over sizes) recomputed from its raw
per-copy times: points, marks, plateau, small-copy latency and the link ratio.

Standard library only: the probe states these figures with these rules and `dossier verify`
recomputes them (harness.analysis.transfer). A point's rate is bytes / median per-copy time
(bytes copied once, nvbandwidth's convention; 1 GB/s = 10^9 bytes per second). The plateau is
harness.analysis.bandwidth.plateau (the longest run of the largest unmarked sizes within the
tolerance, its median; never the maximum). Links and their verdicts: harness.analysis.transfer.links.
"""

from __future__ import annotations

import statistics
from typing import Any

from harness.analysis.allreduce.gap import pcie_ceiling_gbps
from harness.analysis.bandwidth import figures as sweep_rules
from harness.analysis.topology import link_kind
from harness.analysis.transfer import links

LATENCY_MAX_BYTES = 64 * 2**10  # a copy this small is its fixed per-copy cost (~1 us of data at PCIe Gen5)
LATENCY_BOUND_FACTOR = sweep_rules.LAUNCH_BOUND_FACTOR
PLATEAU_TOLERANCE = sweep_rules.PLATEAU_TOLERANCE
REL_TOL = 1e-6
BYTE_RULE = (
    "bytes copied once per copy (nvbandwidth's convention): a copy of S bytes moves S bytes over "
    "the link; GB/s = S / median per-copy time / 1e9"
)
LATENCY_RULE = (
    f"small-copy latency: the median per-copy time of the series' smallest size when it is at most "
    f"{LATENCY_MAX_BYTES // 1024} KiB; a point is latency-bound when its median per-copy time is at "
    f"most {LATENCY_BOUND_FACTOR:g} x that latency"
)
PLATEAU_RULE = (
    f"the longest run of the largest sizes, none latency-bound (nor, for host memory copies, "
    f"cache-resident), whose GB/s lie within {PLATEAU_TOLERANCE:.0%} ((max - min) / median); at least "
    f"{sweep_rules.PLATEAU_MIN_POINTS} sizes; their median, never the maximum "
    f"(harness.analysis.bandwidth.plateau)"
)
CACHE_RULE = "host memory copies only: cache-resident when 2 x bytes (read + write) fit in the CPU's last-level cache"
HOST_DIRECTIONS = ("host_to_device", "device_to_host")
gbps = sweep_rules.gbps  # decimal GB/s, the bandwidth sweep's own


# --- one series ---------------------------------------------------------------------------------


def latency(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The small-copy latency of a series from its smallest point's per-copy times."""
    if not points:
        return {"measured": False, "bytes": None, "median_us": None, "why": "no points"}
    smallest = min(points, key=lambda p: p["bytes"])
    if smallest["bytes"] > LATENCY_MAX_BYTES:
        return {
            "measured": False,
            "bytes": None,
            "median_us": None,
            "why": f"smallest size {smallest['bytes']} B is above {LATENCY_MAX_BYTES} B: no small copy measured",
        }
    median_s = statistics.median(smallest["copy_times_s"])
    return {
        "measured": True,
        "bytes": smallest["bytes"],
        "median_us": median_s * 1e6,
        "why": f"median per-copy time of {smallest['copies']} copies of {smallest['bytes']} B",
    }


def marks(
    median_s: float, nbytes: int, latency_s: float | None, cache_bytes: float | None
) -> tuple[list[str], list[str]]:
    found, why = [], []
    if latency_s is not None and median_s <= LATENCY_BOUND_FACTOR * latency_s:
        found.append("latency_bound")
        why.append(
            f"{median_s * 1e6:.3g} us per copy is within {LATENCY_BOUND_FACTOR:g} x the "
            f"{latency_s * 1e6:.3g} us small-copy latency"
        )
    if cache_bytes is not None and 2 * nbytes <= cache_bytes:
        found.append("cache_resident")
        why.append(f"{2 * nbytes / 2**20:g} MiB read + written fits in the {cache_bytes / 2**20:g} MiB cache")
    return found, why


def points_figures(points: list[dict[str, Any]], cache_bytes: float | None) -> list[dict[str, Any]]:
    """Per point: median_s, gbps, marks and why, from the raw per-copy times."""
    lat = latency(points)
    latency_s = lat["median_us"] / 1e6 if lat["measured"] else None
    out = []
    for point in sorted(points, key=lambda p: p["bytes"]):
        median_s = statistics.median(point["copy_times_s"])
        found, why = marks(median_s, point["bytes"], latency_s, cache_bytes)
        out.append(
            {
                "bytes": point["bytes"],
                "median_s": median_s,
                "gbps": gbps(point["bytes"], median_s),
                "marks": found,
                "why": why,
            }
        )
    return out


def plateau(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """bandwidth's plateau rule on bytes; sizes given back in bytes, the reason in a copy's words."""
    if not figures:
        return {"reached": False, "sizes_bytes": [], "gbps": None, "why": "no points", "maximum": None}
    mib = [{"size_mib": f["bytes"] / 2**20, "gbps": f["gbps"], "marks": f["marks"]} for f in figures]
    found = sweep_rules.plateau(mib, PLATEAU_TOLERANCE)
    by_mib = {f["bytes"] / 2**20: f["bytes"] for f in figures}
    top = max(figures, key=lambda f: f["gbps"])
    sizes = [by_mib[s] for s in found["sizes_mib"]] if found["reached"] else []
    return {
        "reached": found["reached"],
        "sizes_bytes": sizes,
        "gbps": found["gbps"],
        "why": found["why"] if found["reached"] else _no_plateau(figures, len(found["sizes_mib"])),
        "maximum": {"bytes": top["bytes"], "gbps": top["gbps"]},
    }


def _no_plateau(figures: list[dict[str, Any]], flat_top: int) -> str:
    largest = max(figures, key=lambda f: f["bytes"])
    if largest["marks"]:
        return (
            f"the largest size ({largest['bytes']} B) is {' and '.join(largest['marks'])}: no size measured "
            "the sustained rate"
        )
    unmarked = [f for f in figures if not f["marks"]]
    if len(unmarked) < sweep_rules.PLATEAU_MIN_POINTS or flat_top == len(unmarked):
        return (
            f"only {flat_top} unmarked size(s) at the top of the sweep; a plateau needs "
            f"{sweep_rules.PLATEAU_MIN_POINTS}"
        )
    return (
        f"the largest sizes differ by more than {PLATEAU_TOLERANCE:.0%}: the rate is still changing at "
        f"{largest['bytes']} B"
    )


def series_ceiling(series: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """{kind, ceiling_gbps or None, explanation} of the link a series crosses."""
    gpus = {g["torch_index"]: g for g in document.get("gpus", [])}
    direction = series["direction"]
    if direction in HOST_DIRECTIONS:
        return _pcie(gpus.get(series["gpu"]))
    if direction == "device_to_device_peer":
        return _peer(series, gpus, document)
    if direction == "device_local":
        spec = (gpus.get(series["gpu"]) or {}).get("memory_spec_gbps")
        if isinstance(spec, (int, float)):
            return {
                "kind": "device_memory",
                "ceiling_gbps": spec / 2,
                "explanation": f"device memory: each copied byte is read and written, so a copy counted once "
                f"can reach at most half the {spec:g} GB/s published memory bandwidth",
            }
        return {
            "kind": "device_memory",
            "ceiling_gbps": None,
            "explanation": f"device memory: no published bandwidth for this GPU ({_reason(spec)})",
        }
    return {
        "kind": "host_memory",
        "ceiling_gbps": None,
        "explanation": "host memory copy on the CPU: no link is crossed (not PCIe); the catalogue has no "
        "host memory bandwidth to compare",
    }


def _reason(value: Any) -> str:
    return value["unavailable"] if isinstance(value, dict) and "unavailable" in value else str(value)


def _pcie_of(gpu: dict[str, Any] | None) -> dict[str, Any] | None:
    if gpu is None:
        return None
    return links.pcie_link(gpu["pcie"].get("under_copy")) or links.pcie_link(gpu["pcie"].get("idle"))


def _pcie(gpu: dict[str, Any] | None) -> dict[str, Any]:
    link = _pcie_of(gpu)
    if link is None:
        return {"kind": "pcie", "ceiling_gbps": None, "explanation": "NVML gave no PCIe generation and width"}
    return {
        "kind": "pcie",
        "ceiling_gbps": pcie_ceiling_gbps(link["generation"], link["width"]),
        "explanation": links.pcie_explanation(link["generation"], link["width"]),
    }


def pair_cell(document: dict[str, Any], a: int, b: int) -> Any:
    """The nvidia-smi topo -m cell between torch GPUs a and b (via their NVML indices), or None."""
    gpus = {g["torch_index"]: g for g in document.get("gpus", [])}
    pairs = (document.get("topology") or {}).get("gpu_pairs")
    ia, ib = (gpus.get(i, {}).get("nvml_index") for i in (a, b))
    if not isinstance(pairs, dict) or not isinstance(ia, int) or not isinstance(ib, int):
        return None
    return pairs.get(f"GPU{min(ia, ib)}-GPU{max(ia, ib)}")


def _peer(series: dict[str, Any], gpus: dict[int, Any], document: dict[str, Any]) -> dict[str, Any]:
    src, dst = series["src_gpu"], series["dst_gpu"]
    cell = pair_cell(document, src, dst)
    kind = link_kind(cell) if isinstance(cell, str) else {"kind": "unknown"}
    if kind["kind"] == "nvlink":
        version = (gpus.get(src) or {}).get("nvlink", {}).get("version_code")
        ceiling, why = links.nvlink_ceiling(kind["links"], version)
        return {"kind": "nvlink", "ceiling_gbps": ceiling, "explanation": f"nvidia-smi topo -m: {cell}; {why}"}
    ceilings = [c for c in (_pcie(gpus.get(src))["ceiling_gbps"], _pcie(gpus.get(dst))["ceiling_gbps"]) if c]
    if kind["kind"] == "pcie" and len(ceilings) == 2:
        return {
            "kind": "pcie",
            "ceiling_gbps": min(ceilings),
            "explanation": f"nvidia-smi topo -m: {cell} (PCIe between the GPUs); the slower of their links",
        }
    return {"kind": "unknown", "ceiling_gbps": None, "explanation": f"no usable topology cell between them ({cell})"}


def series_figures(series: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """Points, plateau, latency and link ratio of one series, recomputed."""
    cache = _cache_bytes(document)
    figures = points_figures(series["points"], cache)
    found = plateau(figures)
    link = series_ceiling(series, document)
    if found["reached"]:
        rate, basis = found["gbps"], "plateau"
    elif figures:
        largest = max(figures, key=lambda f: f["bytes"])
        rate, basis = largest["gbps"], f"largest size, {largest['bytes']} B (no plateau)"
    else:
        rate, basis = None, "no points"
    ceiling = link["ceiling_gbps"]
    ratio = rate / ceiling if (rate is not None and ceiling) else None
    return {
        "points": figures,
        "plateau": found,
        "latency": latency(series["points"]),
        "link": {**link, "rate_gbps": rate, "rate_basis": basis, "ratio": ratio},
    }


def _cache_bytes(document: dict[str, Any]) -> float | None:
    if document.get("device") != "cpu":
        return None
    size = (document.get("host") or {}).get("cache", {}).get("size_bytes")
    return size if isinstance(size, (int, float)) and not isinstance(size, bool) else None
