"""The transfer document: raw series and groups in, every figure stated by the analysis rules.

The probe measures raw per-copy times (harness.probes.transfer.copies); this module states each
figure from them with the same functions `dossier verify` recomputes them with
(harness.analysis.transfer, transfer_series, transfer_links), so the document and its
verification cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer import checks

COPY_PATHS = {
    "host_device": (
        "torch Tensor.copy_(non_blocking=True) on a side stream of the GPU: cudaMemcpyAsync, "
        "run by a copy engine, as nvbandwidth's host_to_device/device_to_host_memcpy_ce"
    ),
    "pageable": (
        "the same call from/to pageable host memory: the driver stages each copy through its own "
        "pinned buffer and returns only when the host side is done"
    ),
    "peer_write": (
        "torch Tensor.copy_(non_blocking=True) from GPU a to GPU b: torch issues a cross-device copy "
        "on the source GPU's current stream (a side stream of a here), so a's copy engine pushes the "
        "data (nvbandwidth device_to_device_memcpy_write_ce)"
    ),
    "peer_read": (
        "cuMemcpyAsync (CUDA driver API through ctypes) on a side stream of the destination GPU b, so "
        "b's copy engine pulls the data (nvbandwidth device_to_device_memcpy_read_ce); torch cannot "
        "issue this copy: it always uses the source GPU's stream. Peer access is enabled beforehand by "
        "one small torch copy each granted way (cudaDeviceEnablePeerAccess)"
    ),
    "device_local": "torch copy_ within one GPU: cudaMemcpyAsync device to device (nvbandwidth device_local_copy)",
    "host_memory": "torch Tensor.copy_ between two CPU tensors: host memory, timed with perf_counter; not PCIe",
}
CONCURRENCY = (
    "one process drives every GPU; each concurrently timed copy kind has its own stream and its own "
    "host thread (torch and ctypes release the GIL inside the copy call), all released by one "
    "barrier after a joint warm-up; streams on one GPU share its clock, so their overlap is measured"
)


def series_record(
    series_id: str, direction: str, memory: str, issued_by: str, points: list[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    """A raw series: what was copied, how, and its raw points; figures are stated later."""
    record = {
        "id": series_id,
        "direction": direction,
        "memory": memory,
        "gpu": None,
        "src_gpu": None,
        "dst_gpu": None,
        "peer_mode": None,
        "concurrency": "alone",
        "group": None,
        "numa_placement": "default",
        "host_buffer": None,
        "issued_by": issued_by,
        "points": points,
    }
    unknown = set(fields) - set(record)
    if unknown:
        raise TypeError(f"unknown series fields {sorted(unknown)}")
    record.update(fields)
    return record


def group_record(
    group_id: str, kind: str, what: str, members: list[str], same_clock: bool, per_size: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": group_id,
        "kind": kind,
        "what": what,
        "members": members,
        "same_clock": same_clock,
        "how": CONCURRENCY,
        "per_size": per_size,
    }


state_figures = checks.state_figures  # the stated parts, from the raw ones: verify recomputes them the same way


def assemble(
    *,
    device: str,
    torch_version: str,
    sizes: list[int],
    large_sizes: list[int],
    timing: dict[str, Any],
    host: dict[str, Any],
    gpus: list[dict[str, Any]],
    topology: Any,
    peer: dict[str, Any],
    all_gpus: dict[str, Any],
    numa: dict[str, Any],
    series: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    limitations: list[dict[str, str]],
    sizing: str,
) -> dict[str, Any]:
    """The whole document body (probe_main stamps probe, times and argv)."""
    document = {
        "device": device,
        "torch_version": torch_version,
        "sizes_bytes": sizes,
        "large_sizes_bytes": large_sizes,
        "timing": timing,
        "byte_counting": checks.byte_counting(),
        "rules": checks.rules(),
        "copy_paths": COPY_PATHS,
        "concurrency": CONCURRENCY,
        "host": host,
        "gpus": gpus,
        "topology": topology,
        "peer": peer,
        "all_gpus": all_gpus,
        "numa": numa,
        "series": series,
        "groups": groups,
        "limitations": limitations,
        "sizing": sizing,
    }
    return state_figures(document)
