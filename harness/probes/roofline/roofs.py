"""What the roofline probe settles before anything is timed: the shapes, the tile the wave model
assumes, the device's facts (torch's and NVML's, the SKU from the catalogue) and the roofs
(given, from the catalogue, or measured on a CPU)."""

from __future__ import annotations

import argparse
from typing import Any

from harness import catalogue
from harness.analysis.roofline import gemm_shapes
from harness.probes.contract import ProbeUsageError, attempt, log, unavailable
from harness.probes.nvml import NvmlSession, handle_by_uuid

# cuBLAS picks its tile per shape; the wave model states the tile it assumes.
TILES = {"tensor": (128, 256), "simt": (128, 128)}


# ------------------------------------------------------------------------------ shapes


def requested_shapes(args: argparse.Namespace, max_square: int, device: str = "cuda") -> list[gemm_shapes.Shape]:
    """The shapes to time: the defaults (up to MAX_SQUARE) and the device's fixed burst-best shapes,
    unless --no-default-shapes; then the user's."""
    try:
        gemm_shapes.check_tokens(tuple(args.prefill_tokens), gemm_shapes.PREFILL_TOKENS_RANGE, "prefill")
        gemm_shapes.check_tokens(tuple(args.decode_tokens), gemm_shapes.DECODE_TOKENS_RANGE, "decode")
        shapes = (
            []
            if args.no_default_shapes
            else gemm_shapes.default_shapes(max_square, tuple(args.prefill_tokens), tuple(args.decode_tokens))
        )
        shapes += [gemm_shapes.parse_shape(text) for text in args.shapes]
        if args.shapes_file:
            shapes += gemm_shapes.read_shapes_file(args.shapes_file)
        if not args.no_default_shapes:
            shapes = gemm_shapes.with_reference(shapes, device)
        shapes = gemm_shapes.unique_labels(shapes)
    except (ValueError, OSError) as exc:
        raise ProbeUsageError(str(exc)) from None
    if not shapes:
        raise ProbeUsageError("no shapes to run: drop --no-default-shapes or give --shapes/--shapes-file")
    return shapes


def parse_tile(text: str | None, dtype: str) -> tuple[int, int, str]:
    if text:
        try:
            m, n = (int(v) for v in text.lower().split("x"))
        except ValueError:
            raise ProbeUsageError(f"--tile {text!r} is not MxN, e.g. 128x256") from None
        return m, n, "given with --tile"
    kind = "simt" if dtype == "fp32" else "tensor"
    m, n = TILES[kind]
    why = (
        "assumed: cuBLAS's common Hopper tensor-core tile; cuBLAS chooses per shape"
        if kind == "tensor"
        else "assumed: a common fp32 SIMT tile; cuBLAS chooses per shape"
    )
    return m, n, why


# ------------------------------------------------------------------------------ device facts


def gpu_facts(torch: Any, nvml: NvmlSession, index: int) -> tuple[dict[str, Any], Any]:
    """torch's view of the device plus NVML's (handle matched by UUID), and the NVML handle."""
    props = torch.cuda.get_device_properties(index)
    free, total = torch.cuda.mem_get_info(index)
    facts: dict[str, Any] = {
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "cache_kind": "L2",
        "cache_mib": props.L2_cache_size / 2**20,
        "memory_free_mib": free / 2**20,
        "memory_total_mib": total / 2**20,
    }
    handle = handle_by_uuid(nvml, str(getattr(props, "uuid", "")))
    if isinstance(handle, dict):
        facts.update(max_sm_clock_mhz=handle, sku_id=None, sku_evidence=handle["unavailable"])
        return facts, None
    pynvml = nvml.pynvml
    facts["max_sm_clock_mhz"] = attempt(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM)
    pci = attempt(pynvml.nvmlDeviceGetPciInfo_v3, handle)
    memory = attempt(pynvml.nvmlDeviceGetMemoryInfo, handle)
    power = attempt(pynvml.nvmlDeviceGetPowerManagementDefaultLimit, handle)
    if not hasattr(pci, "pciDeviceId"):
        facts.update(sku_id=None, sku_evidence=f"PCI device id unreadable: {pci['unavailable']}")
        return facts, handle
    found = catalogue.identify(
        pci.pciDeviceId,
        memory.total / 2**20 if hasattr(memory, "total") else None,
        power / 1000 if isinstance(power, int) else None,
    )
    facts.update(sku_id=found.sku_id, sku_evidence=found.evidence)
    return facts, handle


def gpu_roofs(args: argparse.Namespace, facts: dict[str, Any], dtype: str | None = None) -> dict[str, Any]:
    """The GPU roofs for DTYPE (default the run's --dtype): the given bandwidth, and the dense peak given
    with --peak-tflops (the run's own dtype only) or from the catalogue."""
    dtype = dtype or args.dtype
    if args.bandwidth_gbps is None:
        raise ProbeUsageError(
            "--bandwidth-gbps is required on a GPU: give the bandwidth probe's sustained "
            "median (dossier bandwidth), never the datasheet figure"
        )
    roofs = {"bandwidth_gbps": args.bandwidth_gbps, "bandwidth_source": "given with --bandwidth-gbps"}
    if args.peak_tflops is not None and dtype == args.dtype:
        return {**roofs, "peak_tflops": args.peak_tflops, "peak_source": "given with --peak-tflops"}
    sku = catalogue.by_id(facts["sku_id"]) if facts.get("sku_id") else None
    if sku is None:
        raise ProbeUsageError(
            f"no dense {dtype} peak: the device is not in the catalogue "
            f"({facts.get('sku_evidence')}); give --peak-tflops"
        )
    peak = sku.get("published", {}).get("dense_tflops", {}).get(dtype)
    if not isinstance(peak, (int, float)):
        raise ProbeUsageError(f"the catalogue has no dense {dtype} peak for {sku['id']}; give --peak-tflops")
    return {
        **roofs,
        "peak_tflops": peak,
        "peak_source": f"catalogue {sku['id']} published dense {dtype} "
        f"({sku['published'].get('source', 'no source given')})",
    }


def cpu_roofs(
    args: argparse.Namespace, torch_side: Any, cache_bytes: int, dtype_ok: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure the CPU roofs the user did not give: copy bandwidth and GEMM peak."""
    measured: dict[str, Any] = {}
    roofs: dict[str, Any] = {}
    if args.bandwidth_gbps is not None:
        roofs.update(bandwidth_gbps=args.bandwidth_gbps, bandwidth_source="given with --bandwidth-gbps")
    else:
        log("roofline: measuring the CPU copy bandwidth")
        buffer = min(max(2 * cache_bytes, 64 * 2**20), 2**30)
        measured.update(torch_side.cpu_copy_gbps(buffer))
        roofs.update(
            bandwidth_gbps=measured["copy_gbps"],
            bandwidth_source=f"measured here: CPU copy of {buffer / 2**20:.0f} MiB (read + write)",
        )
    if args.peak_tflops is not None:
        roofs.update(peak_tflops=args.peak_tflops, peak_source="given with --peak-tflops")
    elif dtype_ok:
        log(f"roofline: measuring the CPU {args.dtype} GEMM peak")
        measured.update(torch_side.cpu_gemm_peak(args.dtype))
        roofs.update(
            peak_tflops=measured["gemm_peak_tflops"],
            peak_source=f"measured here: best CPU {args.dtype} GEMM "
            f"({measured['gemm_peak_size']}^3), the CPU BLAS's own ceiling",
        )
    else:
        roofs.update(peak_tflops=unavailable(f"no CPU {args.dtype} GEMM to measure a peak with"), peak_source="none")
    return roofs, measured
