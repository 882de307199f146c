"""How far the roofline probe's sweep reaches on this device: the largest square that fits, the time
and operand budgets a shape is skipped by, a shape's predicted time against them, and the sentence
that says all of it in the document (`sizing`)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.analysis import timing as timing_rules
from harness.analysis.roofline import gemm_shapes
from harness.analysis.roofline import model as analysis

CPU_MAX_SQUARE = 1024


def square_limit(args: argparse.Namespace, device: str, facts: dict[str, Any]) -> tuple[int, str]:
    """The largest square size to time, and why: given, a CPU's small squares, or three operands
    within a quarter of the free GPU memory."""
    if args.max_square:
        return args.max_square, f"squares up to {args.max_square} (given with --max-square)"
    if device == "cpu":
        return CPU_MAX_SQUARE, f"on a CPU only small squares, up to {CPU_MAX_SQUARE}"
    width = max(analysis.DTYPE_WIDTHS[args.dtype])
    budget = facts["memory_free_mib"] * 2**20 / 4
    fits = [s for s in gemm_shapes.SQUARE_SIZES if 3 * s * s * width <= budget]
    top = max(fits) if fits else gemm_shapes.SQUARE_SIZES[0]
    return top, f"squares up to {top} (three operands within a quarter of {facts['memory_free_mib']:.0f} MiB free)"


def budgets(args: argparse.Namespace, device: str, facts: dict[str, Any]) -> tuple[float, float]:
    """(seconds, operand bytes): a shape predicted to take longer, or whose operands are larger, is skipped."""
    seconds = args.max_shape_seconds or (5.0 if device == "cuda" else 2.0)
    if args.max_operand_mib:
        operand = args.max_operand_mib * 2**20
    else:
        operand = facts["memory_free_mib"] * 2**20 / 4 if device == "cuda" else 512 * 2**20
    return seconds, operand


def predicted_seconds(prediction: dict[str, Any]) -> float:
    """The warm-up's calls and the windows' calls at the attainable rate (at least one call each)."""
    attainable = prediction["attainable_tflops"]
    if not isinstance(attainable, (int, float)):
        return 0.0
    call = prediction["flops"] / (attainable * 1e12)
    windows = timing_rules.WINDOWS * max(timing_rules.WINDOW_S, call)
    return max(timing_rules.WARMUP_S, timing_rules.WARMUP_MIN_CALLS * call) + windows


def sizing_sentence(
    args: argparse.Namespace, device: str, squares: str, skipped: list[str], cache_bytes: int, facts: dict[str, Any]
) -> str:
    """The document's `sizing`: the device, the shapes, the timing, the rotation and the limits, and
    what those limits skipped."""
    where = (
        f"{facts['name']} ({facts['sm_count']} SMs, {facts['cache_mib']:.0f} MiB L2)"
        if device == "cuda"
        else f"the CPU ({cache_bytes / 2**20:.0f} MiB last-level cache)"
    )
    seconds, operand = budgets(args, device, facts)
    if not isinstance(facts["cache_mib"], (int, float)):
        where += f" (cache size unreadable, {cache_bytes / 2**20:.0f} MiB assumed for rotation only)"
    reference = ", ".join("x".join(map(str, dims)) for dims in gemm_shapes.REFERENCE_DIMS[device])
    text = (
        f"On {where}: {squares}; Llama-3-8B projections at prefill M {args.prefill_tokens} and "
        f"decode M {args.decode_tokens}; the fixed burst-best shapes {reference}"
        + (f" also in {', '.join(args.check_dtypes)}" if args.check_dtypes else "")
        + f"; each shape timed in {timing_rules.WINDOWS} windows of ~{timing_rules.WINDOW_S * 1e3:g} ms; "
        f"small shapes rotate input sets so that twice the {cache_bytes / 2**20:.0f} MiB cache separates "
        f"reuses; a shape is skipped past {seconds:g} s predicted or {operand / 2**20:.0f} MiB of operands"
    )
    if device == "cpu":
        text += (
            "; on a CPU the roofs are measured here, not assumed, and the shared input pool is "
            "capped at 256 MiB, so the smallest shapes may still be served from a cache that large"
        )
    if skipped:
        text += f"; skipped by these limits: {', '.join(skipped)}"
    return text + "."
