"""Roofline arithmetic: a GEMM classified before it runs, its tiles over the SMs, the fusion chain's
bytes. Standard library only.

Formulas (Williams, Waterman, Patterson, "Roofline", CACM 2009):
    FLOPs            = 2 M N K                      (one multiply and one add per term)
    fewest bytes     = (M K + K N) x in_width + M N x out_width   (A, B read once, C written once)
    intensity (AI)   = FLOPs / fewest bytes          (FLOP/B)
    ridge            = peak / bandwidth              (FLOP/B)
    attainable       = min(peak, AI x bandwidth)
    bound            = "memory" when AI < ridge, else "compute"

The explanation after the run (`explanation.explain`, its causes: `causes`) is built on this
arithmetic, from numbers in the document only.
"""

from __future__ import annotations

import math
from typing import Any

ALIGN_BYTES = 16  # tensor-core GEMM kernels want 16-byte aligned rows
REL_TOL = 1e-9

# Bytes per element of the inputs and of the output as the probe runs each dtype.
# fp8 runs through torch._scaled_mm with a bf16 output; tf32 keeps fp32 storage.
DTYPE_WIDTHS = {
    "bf16": (2, 2),
    "fp16": (2, 2),
    "fp8": (1, 2),
    "tf32": (4, 4),
    "fp32": (4, 4),
}


# The probe's input sets: each operand view starts on a 256-element boundary in its pool.
OPERAND_ALIGN_ELEMENTS = 256


def input_set_bytes(m: int, n: int, k: int, in_bytes: int) -> int:
    """Bytes of one rotated input set, A [m,k] and W [n,k], each padded to the view alignment."""

    def aligned(elements: int) -> int:
        return -(-elements // OPERAND_ALIGN_ELEMENTS) * OPERAND_ALIGN_ELEMENTS

    return (aligned(m * k) + aligned(n * k)) * in_bytes


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def gemm_min_bytes(m: int, n: int, k: int, in_bytes: int, out_bytes: int) -> int:
    return (m * k + k * n) * in_bytes + m * n * out_bytes


def ridge_flop_per_byte(peak_tflops: float, bandwidth_gbps: float) -> float:
    return peak_tflops * 1e12 / (bandwidth_gbps * 1e9)


def attainable_tflops(ai: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    return min(peak_tflops, ai * bandwidth_gbps * 1e9 / 1e12)


def classify(
    m: int, n: int, k: int, in_bytes: int, out_bytes: int, peak_tflops: float, bandwidth_gbps: float
) -> dict[str, Any]:
    """The prediction for one GEMM on the given roofs."""
    flops = gemm_flops(m, n, k)
    nbytes = gemm_min_bytes(m, n, k, in_bytes, out_bytes)
    ai = flops / nbytes
    ridge = ridge_flop_per_byte(peak_tflops, bandwidth_gbps)
    return {
        "flops": flops,
        "min_bytes": nbytes,
        "ai_flop_per_byte": ai,
        "bound": "memory" if ai < ridge else "compute",
        "attainable_tflops": attainable_tflops(ai, peak_tflops, bandwidth_gbps),
    }


def tiling(m: int, n: int, tile_m: int, tile_n: int, sm_count: int) -> dict[str, Any]:
    """Output tiles over the SMs: waves, the last wave's fill, and the padding the tiles compute."""
    tiles_m, tiles_n = math.ceil(m / tile_m), math.ceil(n / tile_n)
    tiles = tiles_m * tiles_n
    waves = math.ceil(tiles / sm_count)
    last = tiles - (waves - 1) * sm_count
    padded = tiles_m * tile_m * tiles_n * tile_n
    return {
        "tile_m": tile_m,
        "tile_n": tile_n,
        "output_tiles": tiles,
        "sm_count": sm_count,
        "waves_exact": tiles / sm_count,
        "waves": waves,
        "last_wave_utilisation": last / sm_count,
        "wave_efficiency": tiles / (waves * sm_count),
        "padded_m": tiles_m * tile_m,
        "padded_n": tiles_n * tile_n,
        "padding_share": 1 - (m * n) / padded,
    }


def unaligned_dims(m: int, n: int, k: int, in_bytes: int, out_bytes: int) -> list[str]:
    """Row lengths (A and W rows of K, C rows of N) that are not a multiple of 16 bytes."""
    found = []
    if (k * in_bytes) % ALIGN_BYTES:
        found.append(f"K={k} ({k * in_bytes} B rows of A and B)")
    if (n * out_bytes) % ALIGN_BYTES:
        found.append(f"N={n} ({n * out_bytes} B rows of C)")
    return found


# The elementwise chain the probe fuses: four eager kernels, four FLOPs per element (x*2, +1, relu, y*y).
FUSION_CHAIN: dict[str, Any] = {"text": "y = x*2; y = y+1; y = relu(y); y = y*y", "kernels": 4, "flops_per_element": 4}


def fusion_accounting(
    elements: int, element_bytes: int, unfused_kernels: int, flops_per_element: int
) -> dict[str, Any]:
    """HBM bytes each version of an elementwise chain must move, and its intensity.

    Unfused: every kernel reads its input and writes its output once. Fused: one read, one write.
    """
    unfused = 2 * unfused_kernels * elements * element_bytes
    fused = 2 * elements * element_bytes
    flops = flops_per_element * elements
    return {
        "flops": flops,
        "unfused_bytes": unfused,
        "fused_bytes": fused,
        "unfused_ai_flop_per_byte": flops / unfused,
        "fused_ai_flop_per_byte": flops / fused,
    }


def fusion_comparison(fusion: dict[str, Any], peak_tflops: float, bandwidth_gbps: float) -> dict[str, Any]:
    """Both versions on the roofline, and the time fusion saved against the traffic it removed."""
    unfused_s, fused_s = fusion["unfused"]["median_s"], fusion["fused"]["median_s"]
    removed = fusion["unfused_bytes"] - fusion["fused_bytes"]
    at_roof_s = removed / (bandwidth_gbps * 1e9)
    saved = unfused_s - fused_s
    result = {
        "speedup": unfused_s / fused_s,
        "traffic_ratio": fusion["unfused_bytes"] / fusion["fused_bytes"],
        "bytes_removed": removed,
        "time_saved_s": saved,
        "removed_bytes_at_roof_s": at_roof_s,
        "unfused_attainable_tflops": attainable_tflops(fusion["unfused_ai_flop_per_byte"], peak_tflops, bandwidth_gbps),
        "fused_attainable_tflops": attainable_tflops(fusion["fused_ai_flop_per_byte"], peak_tflops, bandwidth_gbps),
    }
    result["text"] = (
        f"Fusion removed {removed / 2**20:.0f} MiB of traffic per call ({result['traffic_ratio']:.1f}x fewer bytes) "
        f"and saved {saved * 1e3:.3g} ms ({result['speedup']:.2f}x faster); at the {bandwidth_gbps:.0f} GB/s roof "
        f"those bytes take {at_roof_s * 1e3:.3g} ms, so the time saved is {saved / at_roof_s:.2f}x what the "
        f"removed traffic costs at the roof. Both versions are memory-bound (AI {fusion['unfused_ai_flop_per_byte']:.3g} and "
        f"{fusion['fused_ai_flop_per_byte']:.3g} FLOP/B): unfused ran at {fusion['unfused']['achieved_gbps']:.0f} "
        f"GB/s, fused at {fusion['fused']['achieved_gbps']:.0f} GB/s."
    )
    return result
