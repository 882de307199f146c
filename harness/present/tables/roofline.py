"""The roofline's GEMMs as bursts, as Markdown: for each measured shape its rate, its windows and how
much they spread, the SM clock NVML gave around them and whether the power cap was flagged; for a
launch-bound shape its kernel-only rate (CUDA-graph replay) and the host's launch cost per call;
then the same for each dtype check (host side; every figure recomputed by
harness.analysis.roofline.figures)."""

from __future__ import annotations

from typing import Any

from harness.analysis.roofline.figures import (BURST_RULE, LEGACY_BURST_RULE, best_rule, burst_windows,
                                               dtype_documents, headlines, windowed)
from harness.analysis.timing import LAUNCH_BOUND_S, SPREAD_SCOPE


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _cap(value: Any) -> str:
    if isinstance(value, dict) and "unavailable" in value:
        return f"unknown ({value['unavailable']})"
    return str(value)


def _percent(value: Any) -> str:
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


HEADERS = {  # windowed (format 5 on) and per-call (before) tables
    True: ("| shape | bound | burst TFLOPS | spread across windows | windows x ms | calls | SM clock MHz | power cap | "
           "launch-bound: kernel-only TFLOPS, host launch µs/call |", "|---|---|---:|---:|---|---:|---:|---|---|"),
    False: ("| shape | bound | burst TFLOPS | window ms | timed calls | SM clock MHz | power cap |",
            "|---|---|---:|---:|---:|---:|---|"),
}


def _cells(row: dict[str, Any], windows: bool) -> list[str]:
    """The cells after shape, bound and rate: how the rate was timed, at what clock, and (windows) the
    launch-bound shape's kernel-only rate."""
    clock, cap = _number(row["sm_clock_mhz"], ".0f"), _cap(row["power_cap"])
    if not windows:
        return [_number(row["window_ms"], ".3g"), str(row["timed_calls"]), clock, cap]
    launch = (f"yes: {_number(row.get('kernel_tflops'), '.4g')}, {_number(row.get('host_launch_us'), '.3g')}"
              if row.get("launch_bound") else "no")
    return [_percent(row.get("window_spread")), f"{row.get('windows', '—')} x {_number(row['window_ms'], '.3g')}",
            str(row["timed_calls"]), clock, cap, launch]


def _rows(document: dict[str, Any], best: Any) -> list[str]:
    windows = windowed(document)
    bounds = headlines(document)["classifications"]
    lines = list(HEADERS[windows])
    for row in burst_windows(document):
        cells = [f"{row['label']}{' (best)' if row['label'] == best else ''}", bounds.get(row["label"], "—"),
                 _number(row["burst_tflops"], ".4g"), *_cells(row, windows)]
        lines.append("| " + " | ".join(cells) + " |")
    if len(lines) == 2:
        lines.append("| no shape was measured |" + " |" * (lines[0].count("|") - 2))
    return lines


def _section(document: dict[str, Any], title: str) -> list[str]:
    head = headlines(document)
    best = head["burst_best_tflops"]
    said = (f"Burst best: **{_number(best, '.4g')} TFLOPS** at {head['best_shape']}."
            if best is not None else "No burst best: none of its burst-best shapes was measured.")
    return [title, "", said, "", *_rows(document, head["best_shape"]), ""]


def render(document: dict[str, Any]) -> str:
    views = dtype_documents(document)
    lines = [f"# Roofline bursts: {document.get('dtype')} GEMMs on {document.get('device')}", "",
             f"Each rate is a **burst** ({BURST_RULE if windowed(document) else LEGACY_BURST_RULE}). "
             f"The {best_rule(document)}."]
    if windowed(document):
        lines += ["", f"Timing: {document['timing']['rule']}.",
                  f"Spread across windows: {SPREAD_SCOPE['windows']}; it says nothing about the next run (the "
                  f"run-to-run spread is the catalogue's, in the report). SM clock = the median NVML reading around "
                  f"the windows ({document['timing'].get('nvml', 'NVML refresh period not recorded')}). "
                  f"Launch-bound = an eager call under {LAUNCH_BOUND_S * 1e6:g} µs: its rate is the host's launch "
                  f"rate; kernel-only = the same calls replayed from a CUDA graph; host launch = eager - kernel-only "
                  f"per call."]
    else:
        lines += ["", "Window = the sum of the shape's timed calls (each call timed alone, before format 5); SM "
                      "clock = the median NVML sample inside it."]
    lines.append("")
    for dtype, view in views.items():
        title = (f"## {dtype} (the run's dtype, every shape)" if view is document
                 else f"## {dtype} (dtype check: the fixed burst-best shapes)")
        lines += _section(view, title if len(views) > 1 else "## Shapes")
    return "\n".join(lines).rstrip("\n") + "\n"
