"""The roofline's GEMMs as bursts, as Markdown: for each measured shape its rate, the window its
timed calls filled, the SM clock NVML sampled inside that window and whether the power cap was
engaged (host side; every figure recomputed by harness.analysis.roofline.figures)."""

from __future__ import annotations

from typing import Any

from harness.analysis.roofline.figures import BURST_RULE, burst_windows, headlines


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _cap(value: Any) -> str:
    if isinstance(value, dict) and "unavailable" in value:
        return f"unknown ({value['unavailable']})"
    return str(value)


def render(document: dict[str, Any]) -> str:
    head = headlines(document)
    bounds = head["classifications"]
    lines = [f"# Roofline bursts: {document.get('dtype')} GEMMs on {document.get('device')}", "",
             f"Each rate is a **burst** ({BURST_RULE}). Window = the sum of the shape's timed calls; SM clock = "
             "the median NVML sample inside it.", "",
             "| shape | bound | burst TFLOPS | window ms | timed calls | SM clock MHz | power cap |",
             "|---|---|---:|---:|---:|---:|---|"]
    for row in burst_windows(document):
        best = " (best)" if row["label"] == head["best_shape"] else ""
        lines.append(f"| {row['label']}{best} | {bounds.get(row['label'], '—')} | {_number(row['burst_tflops'], '.4g')} "
                     f"| {_number(row['window_ms'], '.3g')} | {row['timed_calls']} | "
                     f"{_number(row['sm_clock_mhz'], '.0f')} | {_cap(row['power_cap'])} |")
    if len(lines) == 6:
        lines.append("| no shape was measured | | | | | | |")
    return "\n".join(lines) + "\n"
