"""The roofline's GEMMs as bursts, as Markdown: for each measured shape its headline rate, its windows
and how much they spread, the SM clock NVML gave around them and whether the power cap was flagged;
for a launch-bound shape (probe contract 4 on) the headline is its kernel-only rate (CUDA-graph replay)
with its eager rate beside it, the host's launch rate for an eager caller on this host (before, the
eager rate headlined and the kernel-only rate stood beside it); then the same for each dtype check
(host side; every figure recomputed by harness.analysis.roofline.figures)."""

from __future__ import annotations

from typing import Any

from harness.analysis.roofline.figures import best_rule, headlines
from harness.analysis.roofline.reading import dtype_documents
from harness.analysis.roofline.timings import BURST_RULE, LEGACY_BURST_RULE, burst_windows, kernel_headline, windowed
from harness.analysis.timing import GRAPH_BELOW_S, KERNEL_ONLY, LAUNCH_BOUND_S, SPREAD_SCOPE


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _cap(value: Any) -> str:
    if isinstance(value, dict) and "unavailable" in value:
        return f"unknown ({value['unavailable']})"
    return str(value)


def _percent(value: Any) -> str:
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


HEADERS = {  # kernel-only headlines (contract 4 on), eager headlines in windows (format 5), per call (before)
    "kernel": (
        "| shape | bound | burst TFLOPS | spread across windows | windows x ms | calls | SM clock MHz | power cap | "
        "launch-bound: eager TFLOPS on this host (spread across windows), host launch µs/call |",
        "|---|---|---:|---:|---|---:|---:|---|---|",
    ),
    "windows": (
        "| shape | bound | burst TFLOPS | spread across windows | windows x ms | calls | SM clock MHz | "
        "power cap | launch-bound: kernel-only TFLOPS, host launch µs/call |",
        "|---|---|---:|---:|---|---:|---:|---|---|",
    ),
    "per_call": (
        "| shape | bound | burst TFLOPS | window ms | timed calls | SM clock MHz | power cap |",
        "|---|---|---:|---:|---:|---:|---|",
    ),
}


def _rule(document: dict[str, Any]) -> str:
    return "kernel" if kernel_headline(document) else "windows" if windowed(document) else "per_call"


def _launch(row: dict[str, Any], rule: str) -> str:
    """The launch-bound cell: beside a kernel-only headline the eager rate (the host's launch rate), beside
    an eager one (documents before probe contract 4) the kernel-only rate."""
    if not row.get("launch_bound"):
        return "no"
    host = _number(row.get("host_launch_us"), ".3g")
    if rule == "kernel":
        if row.get("rate_basis") != KERNEL_ONLY:
            return "yes: no CUDA-graph replay, the rate is eager"
        return f"yes: {_number(row.get('eager_tflops'), '.4g')} ({_percent(row.get('eager_spread'))}), {host}"
    return f"yes: {_number(row.get('kernel_tflops'), '.4g')}, {host}"


def _cells(row: dict[str, Any], rule: str) -> list[str]:
    """The cells after shape, bound and rate: how the rate was timed, at what clock, and (windows) the
    launch-bound shape's other rate."""
    clock, cap = _number(row["sm_clock_mhz"], ".0f"), _cap(row["power_cap"])
    if rule == "per_call":
        return [_number(row["window_ms"], ".3g"), str(row["timed_calls"]), clock, cap]
    return [
        _percent(row.get("window_spread")),
        f"{row.get('windows', '—')} x {_number(row['window_ms'], '.3g')}",
        str(row["timed_calls"]),
        clock,
        cap,
        _launch(row, rule),
    ]


def _rows(document: dict[str, Any], best: Any) -> list[str]:
    rule = _rule(document)
    bounds = headlines(document)["classifications"]
    lines = list(HEADERS[rule])
    for row in burst_windows(document):
        rate = _number(row["burst_tflops"], ".4g") + (" kernel-only" if row.get("rate_basis") == KERNEL_ONLY else "")
        cells = [
            f"{row['label']}{' (best)' if row['label'] == best else ''}",
            bounds.get(row["label"], "—"),
            rate,
            *_cells(row, rule),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(lines) == 2:
        lines.append("| no shape was measured |" + " |" * (lines[0].count("|") - 2))
    return lines


def _section(document: dict[str, Any], title: str) -> list[str]:
    head = headlines(document)
    best = head["burst_best_tflops"]
    said = (
        f"Burst best: **{_number(best, '.4g')} TFLOPS** at {head['best_shape']}."
        if best is not None
        else "No burst best: none of its burst-best shapes was measured."
    )
    return [title, "", said, "", *_rows(document, head["best_shape"]), ""]


def render(document: dict[str, Any]) -> str:
    views = dtype_documents(document)
    lines = [
        f"# Roofline bursts: {document.get('dtype')} GEMMs on {document.get('device')}",
        "",
        f"Each rate is a **burst** ({BURST_RULE if windowed(document) else LEGACY_BURST_RULE}). "
        f"The {best_rule(document)}.",
    ]
    if windowed(document):
        kernel = kernel_headline(document)
        graph_spread = " (a kernel-only rate's: across its CUDA-graph windows, milliseconds apart)" if kernel else ""
        launch = (
            f"Launch-bound = kernels that take under {LAUNCH_BOUND_S * 1e6:g} µs a call (replayed from a CUDA "
            f"graph, as is every shape whose eager call is under {GRAPH_BELOW_S * 1e6:g} µs): its headline is "
            f"that **kernel-only** rate, what the GPU does, as kernel benchmarks time small kernels. The eager "
            f"rate beside it is the **host's launch rate** for an eager caller on this host: host-dependent and "
            f"noisy run to run (its measured run-to-run spread: the report's Repeatability section)"
            if kernel
            else f"Launch-bound = an eager call under {LAUNCH_BOUND_S * 1e6:g} µs: its rate (the headline before "
            f"probe contract 4) is the host's launch rate; kernel-only = the same calls replayed from a CUDA "
            f"graph"
        )
        lines += [
            "",
            f"Timing: {document['timing']['rule']}.",
            f"Spread across windows: {SPREAD_SCOPE['windows']}{graph_spread}; it says nothing about the next "
            f"run (the run-to-run spread is the catalogue's, in the report's Repeatability section). SM clock = "
            f"the median NVML reading around the eager windows "
            f"({document['timing'].get('nvml', 'NVML refresh period not recorded')}). {launch}; host launch = "
            f"eager - kernel-only per call.",
        ]
    else:
        lines += [
            "",
            "Window = the sum of the shape's timed calls (each call timed alone, before format 5); SM "
            "clock = the median NVML sample inside it.",
        ]
    lines.append("")
    for dtype, view in views.items():
        title = (
            f"## {dtype} (the run's dtype, every shape)"
            if view is document
            else f"## {dtype} (dtype check: the fixed burst-best shapes)"
        )
        lines += _section(view, title if len(views) > 1 else "## Shapes")
    return "\n".join(lines).rstrip("\n") + "\n"
