"""The GEMMs the roofline model leaves unexplained, each named with its figures, and the one
explanation the bandwidth sweep adds: the rate any kernel attains at a memory-bound GEMM's transfer
size. Standard library only; recomputed from the raw documents like every other figure.

Why the sweep can explain a GEMM the model cannot: the model holds a memory-bound GEMM to the
plateau of the largest buffers, but a kernel moving tens of MiB pays a fixed cost per kernel that
the plateau hides. The bandwidth step measured that cost with its own copy kernel
(`bandwidth.figures.kernel_fixed_cost`: the line through its two smallest sweep points that are
not cache-resident). On the lent H200 (2026-12-01) the line through 128 MiB in 35.5 us and 512 MiB
in 130.5 us is 3.9 us + bytes / 4241 GB/s: at the 49.2 MiB of qkv-decode-64 any kernel attains
3218 GB/s, at the 33.0 MiB of o-decode-64 2876 GB/s, and those GEMMs' kernels reached 98% and
nearly 100% of it (tests/fixtures/roofline/windows-h200.*.json, three processes), where the model
alone found 74% and 68% of the 4232 GB/s roof with no cause. A GEMM reaching at least the model's
NEAR_ROOF share of that rate is explained by it; one below stays unexplained, with its figures.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.bandwidth import figures as bandwidth
from harness.analysis.roofline import causes, reading, timings
from harness.analysis.roofline import model as rl
from harness.analysis.roofline.explanation import NEAR_ROOF, context_of, explain


def _seconds(timed: dict[str, Any]) -> float | None:
    kernel_only = timed.get("rate_basis") == timing.KERNEL_ONLY
    seconds = timed.get("headline_s") if kernel_only else timed.get("median_s")
    return seconds if isinstance(seconds, (int, float)) and seconds > 0 else None


def unexplained(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measured GEMM, of every dtype the document timed, that the model does not explain:
    {dtype, label, bound, min_bytes, seconds, basis, achieved_tflops, effective_gbps, fraction,
    roof_gbps, peak_tflops, checked} (checked: what the model ruled out, with its numbers)."""
    found = []
    for dtype, view in reading.dtype_documents(document).items():
        if not reading.roofs_known(view):
            continue
        context = context_of(view)
        for shape in reading.measured(view):
            prediction, timed = reading.prediction(view, shape["label"]), timings.as_timed(view, shape)
            seconds = _seconds(timed)
            if seconds is None:
                continue
            explanation = explain(prediction, timed, context)
            if explanation["explained"]:
                continue
            achieved = rl.gemm_flops(prediction["m"], prediction["n"], prediction["k"]) / seconds / 1e12
            found.append(
                {
                    "dtype": dtype,
                    "label": shape["label"],
                    "bound": prediction["bound"],
                    "min_bytes": prediction["min_bytes"],
                    "seconds": seconds,
                    "basis": timed["rate_basis"],
                    "achieved_tflops": achieved,
                    "effective_gbps": prediction["min_bytes"] / seconds / 1e9,
                    "fraction": achieved / prediction["attainable_tflops"],
                    "roof_gbps": context["bandwidth_gbps"],
                    "peak_tflops": context["peak_tflops"],
                    "checked": causes.ruled_out(
                        prediction, context, seconds, timed, timed["rate_basis"] == timing.KERNEL_ONLY
                    ),
                }
            )
    return found


BEYOND_LINE = 1.05  # a GEMM faster than this share of the line is not described by it


def split(
    document: dict[str, Any] | None, bandwidth_document: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the GEMMs left unexplained, the explanations by transfer size) of a roofline DOCUMENT, the
    bandwidth sweep's fixed cost per kernel (BANDWIDTH_DOCUMENT) applied to the memory-bound ones
    the model leaves."""
    if document is None or not isinstance(document.get("measurements"), dict):
        return [], []  # no timed GEMM in the document: nothing to explain
    cost = bandwidth.kernel_fixed_cost(bandwidth_document) if bandwidth_document is not None else None
    left, by_size = [], []
    for entry in unexplained(document):
        found = at_transfer_size(entry, cost)
        if found is None:
            left.append(entry)
        else:
            by_size.append(found)
    return left, by_size


def at_transfer_size(entry: dict[str, Any], cost: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sweep's explanation of an unexplained memory-bound GEMM: {attainable_gbps, share, text} when
    it reached NEAR_ROOF to BEYOND_LINE of what any kernel attains at its transfer size; else None.

    The line is used only where a kernel streams at least as long as its fixed cost (16 MiB on the
    H200): below, a kernel's time is mostly that cost, which the sweep's points do not resolve (a
    0.4 MiB GEMM of 2.6 us beat the 3.9 us it predicts)."""
    if cost is None or entry["bound"] != "memory":
        return None
    if entry["min_bytes"] < cost["fixed_s"] * cost["rate_gbps"] * 1e9:
        return None
    attainable = bandwidth.attainable_at(cost, entry["min_bytes"])
    share = entry["effective_gbps"] / attainable
    if not NEAR_ROOF <= share <= BEYOND_LINE:
        return None
    (b1, b2), (t1, t2) = cost["through_bytes"], cost["through_s"]
    text = (
        f"{entry['label']} ({entry['dtype']}): explained by its transfer size: it moves "
        f"{entry['min_bytes'] / 2**20:.1f} MiB, and the bandwidth sweep's {cost['kernel']} kernel "
        f"({b1 / 2**20:.0f} MiB in {t1 * 1e6:.1f} us, {b2 / 2**20:.0f} MiB in {t2 * 1e6:.1f} us"
        f"{', fastest iterations' if cost.get('statistic') == 'fastest' else ''}) costs "
        f"{cost['fixed_s'] * 1e6:.1f} us a kernel + bytes / {cost['rate_gbps']:.0f} GB/s, so a kernel moving "
        f"that much attains {attainable:.0f} GB/s; it reached {entry['effective_gbps']:.0f} GB/s, "
        f"{share:.0%} of that ({entry['fraction']:.0%} of the {entry['roof_gbps']:.0f} GB/s roof)"
    )
    return {"attainable_gbps": attainable, "share": share, "text": text}


def _per_call(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def line(entry: dict[str, Any]) -> str:
    """An unexplained GEMM in one line, with its figures (what the model ruled out: `ruled_out`)."""
    rate = (
        f"{entry['effective_gbps']:.0f} GB/s over its {entry['min_bytes'] / 2**20:.1f} MiB, "
        f"{entry['fraction']:.0%} of the {entry['roof_gbps']:.0f} GB/s roof"
        if entry["bound"] == "memory"
        else f"{entry['achieved_tflops']:.4g} TFLOPS, {entry['fraction']:.0%} of the "
        f"{entry['peak_tflops']:.4g} TFLOPS peak"
    )
    basis = "kernel-only" if entry["basis"] == timing.KERNEL_ONLY else "eager"
    return f"{entry['label']} ({entry['dtype']}, {entry['bound']}-bound): {rate} ({basis}, {_per_call(entry['seconds'])} a call)"


def ruled_out(entries: list[dict[str, Any]]) -> list[str]:
    """What the model checked and found no cause in, once per distinct finding, naming its GEMMs."""
    labels: dict[str, list[str]] = {}
    for entry in entries:
        labels.setdefault(entry["checked"], []).append(entry["label"])
    return [f"ruled out for {', '.join(names)}: {checked}" for checked, names in labels.items()]
