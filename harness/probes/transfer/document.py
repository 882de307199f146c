"""The transfer document: raw series and groups in, every figure stated by the analysis rules.

The probe measures raw per-copy times (harness.probes.transfer.copies); this module states each
figure from them with the same functions `dossier verify` recomputes them with
(harness.analysis.transfer, transfer_series, transfer_links), so the document and its
verification cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer import figures as analysis
from harness.analysis.transfer import links as link_rules
from harness.analysis.transfer import series as series_rules

COPY_PATHS = {
    "host_device": ("torch Tensor.copy_(non_blocking=True) on a side stream of the GPU: cudaMemcpyAsync, "
                    "run by a copy engine, as nvbandwidth's host_to_device/device_to_host_memcpy_ce"),
    "pageable": ("the same call from/to pageable host memory: the driver stages each copy through its own "
                 "pinned buffer and returns only when the host side is done"),
    "peer_write": ("torch Tensor.copy_(non_blocking=True) from GPU a to GPU b: torch issues a cross-device copy "
                   "on the source GPU's current stream (a side stream of a here), so a's copy engine pushes the "
                   "data (nvbandwidth device_to_device_memcpy_write_ce)"),
    "peer_read": ("cuMemcpyAsync (CUDA driver API through ctypes) on a side stream of the destination GPU b, so "
                  "b's copy engine pulls the data (nvbandwidth device_to_device_memcpy_read_ce); torch cannot "
                  "issue this copy: it always uses the source GPU's stream. Peer access is enabled beforehand by "
                  "one small torch copy each granted way (cudaDeviceEnablePeerAccess)"),
    "device_local": "torch copy_ within one GPU: cudaMemcpyAsync device to device (nvbandwidth device_local_copy)",
    "host_memory": "torch Tensor.copy_ between two CPU tensors: host memory, timed with perf_counter; not PCIe",
}
CONCURRENCY = ("one process drives every GPU; each concurrently timed copy kind has its own stream and its own "
               "host thread (torch and ctypes release the GIL inside the copy call), all released by one "
               "barrier after a joint warm-up; streams on one GPU share its clock, so their overlap is measured")


def series_record(series_id: str, direction: str, memory: str, issued_by: str, points: list[dict[str, Any]],
                  **fields: Any) -> dict[str, Any]:
    """A raw series: what was copied, how, and its raw points; figures are stated later."""
    record = {"id": series_id, "direction": direction, "memory": memory, "gpu": None, "src_gpu": None,
              "dst_gpu": None, "peer_mode": None, "concurrency": "alone", "group": None,
              "numa_placement": "default", "host_buffer": None, "issued_by": issued_by, "points": points}
    unknown = set(fields) - set(record)
    if unknown:
        raise TypeError(f"unknown series fields {sorted(unknown)}")
    record.update(fields)
    return record


def group_record(group_id: str, kind: str, what: str, members: list[str], same_clock: bool,
                 per_size: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": group_id, "kind": kind, "what": what, "members": members, "same_clock": same_clock,
            "how": CONCURRENCY, "per_size": per_size}


def rules() -> dict[str, Any]:
    return {"plateau_tolerance": series_rules.PLATEAU_TOLERANCE,
            "plateau": series_rules.PLATEAU_RULE,
            "latency_max_bytes": series_rules.LATENCY_MAX_BYTES,
            "latency_bound_factor": series_rules.LATENCY_BOUND_FACTOR,
            "latency": series_rules.LATENCY_RULE, "cache_resident": series_rules.CACHE_RULE,
            "degraded_link_fraction": link_rules.DEGRADED_LINK_FRACTION,
            "degraded_link_source": link_rules.DEGRADED_LINK_SOURCE,
            "exceeds_tolerance": link_rules.EXCEEDS_TOLERANCE,
            "pcie_source": link_rules.PCIE_SOURCE, "nvlink_source": link_rules.NVLINK_SOURCE}


def state_figures(document: dict[str, Any]) -> dict[str, Any]:
    """Fill every series', group's and verdict's stated figures from the raw per-copy times."""
    figures = analysis.all_series_figures(document)
    for series in document["series"]:
        fig = figures[series["id"]]
        by_bytes = {p["bytes"]: p for p in fig["points"]}
        for point in series["points"]:
            computed = by_bytes[point["bytes"]]
            point.update(median_s=computed["median_s"], gbps=computed["gbps"], marks=computed["marks"],
                         why=computed["why"])
        link = fig["link"]
        series.update(plateau=fig["plateau"], latency=fig["latency"],
                      link={**link, "explanation": link["explanation"].rstrip(".") + ". " + link_rules.ratio_sentence(
                          link["rate_gbps"], link["ceiling_gbps"], series["id"], link["rate_basis"])})
    for group in document["groups"]:
        computed = analysis.group_figures(group, figures)
        group["total_plateau_gbps"] = computed["total_plateau_gbps"]
        for entry, again in zip(group["per_size"], computed["per_size"], strict=True):
            entry.update(total_gbps=again["total_gbps"], overlap=again["overlap"])
    document["link_checks"] = analysis.link_checks(document, figures)
    document["p2p_checks"] = analysis.p2p_checks(document, figures)
    return document


def assemble(*, device: str, torch_version: str, sizes: list[int], large_sizes: list[int],
             timing: dict[str, Any], host: dict[str, Any], gpus: list[dict[str, Any]], topology: Any,
             peer: dict[str, Any], all_gpus: dict[str, Any], numa: dict[str, Any],
             series: list[dict[str, Any]], groups: list[dict[str, Any]], limitations: list[dict[str, str]],
             sizing: str) -> dict[str, Any]:
    """The whole document body (probe_main stamps probe, times and argv)."""
    document = {
        "device": device, "torch_version": torch_version, "sizes_bytes": sizes, "large_sizes_bytes": large_sizes,
        "timing": timing,
        "byte_counting": {"rule": series_rules.BYTE_RULE, "gb_bytes": 10**9},
        "rules": rules(), "copy_paths": COPY_PATHS, "concurrency": CONCURRENCY,
        "host": host, "gpus": gpus, "topology": topology, "peer": peer, "all_gpus": all_gpus, "numa": numa,
        "series": series, "groups": groups, "limitations": limitations, "sizing": sizing,
    }
    return state_figures(document)
