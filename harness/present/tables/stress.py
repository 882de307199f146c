"""The stress run as Markdown: per GPU its burst and steady rates, when the power cap engaged, power
against the limit and target, the clock-event reasons, temperatures, result mismatches, memory
errors, XID/ECC/remaps and each check (every figure recomputed by harness.analysis.stress); and,
in a bundle, the roofline's burst beside the stress run's sustained rate for the same dtype."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.roofline import figures as roofline_figures
from harness.analysis.roofline import reading as roofline_reading
from harness.analysis.stress import figures as analysis
from harness.analysis.stress.telemetry import POWER_TARGET_RATIO


def _n(value: Any, spec: str = ".4g") -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _label(document: dict[str, Any], device: dict[str, Any]) -> str:
    return f"GPU{device['index']}" if document["device"] == "cuda" else "CPU"


def _cap(device: dict[str, Any]) -> str:
    cap = device["power_cap"]
    return (
        f"after {_n(cap['engaged_after_s'], '.3g')} s"
        if cap["engaged_after_s"] is not None
        else f"never ({cap['why_never']})"
    )


def _power(device: dict[str, Any]) -> str:
    p = device["power"]
    if p.get("max_w") is None:
        return f"— ({p.get('why')})"
    return (
        f"{_n(p['median_w'])} / {_n(p['max_w'])} of {_n(p['limit_w'], 'g')} W "
        f"({'target reached' if p['target_reached'] else 'target not reached'})"
    )


def _faults(device: dict[str, Any]) -> str:
    check, memory, events = device["result_check"], device["memory_test"], device["nvml_events"]
    new = device["counters_new"]
    remaps = (
        "—"
        if new is None
        else str(
            sum(
                v
                for k, v in new.items()
                if k != "volatile_corrected_errors" and isinstance(v, int) and not isinstance(v, bool)
            )
        )
    )
    return (
        f"{check['mismatched_elements'] if check['iterations_checked'] else '—'} / "
        f"{memory['mismatched_words'] if memory else '—'} / "
        f"{(str(events['events']) + (' XID ' + ','.join(map(str, events['xids'])) if events['xids'] else '')) if events else '—'}"
        f" / {remaps}"
    )


def render(document: dict[str, Any]) -> str:
    return per_gpu_table(document, analysis.headlines(document))


def per_gpu_table(document: dict[str, Any], heads: dict[str, Any]) -> str:
    """The per-GPU table from the document's HEADS (computed once by the caller: the analysis
    recomputes every bucket, so a fleet of 1,000 nodes feels each extra pass)."""
    shape = "x".join(str(heads["shape"][d]) for d in "mnk")
    lines = [
        f"# Stress: {heads['dtype']} GEMM {shape} for {heads['seconds']:g} s on {document['device']}",
        "",
        "Burst = the first one-second bucket; steady = the median of the second half (a **sustained** rate). "
        f"Power: median / max of the GEMM phase against the enforced limit (target: {POWER_TARGET_RATIO:g} of it). Faults: "
        "mismatched GEMM elements / memory words read back wrong / XID+ECC events / new uncorrected ECC "
        "errors and remapped rows.",
        "",
        "| device | burst TFLOPS | steady TFLOPS | burst/steady | power cap | power W | clock-event reasons "
        "(samples) | max GPU / HBM C | faults | checks |",
        "|---|---:|---:|---:|---|---|---|---|---|---|",
    ]
    for d in heads["devices"]:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(d["clock_event_reasons"].items())) or "—"
        checks = ", ".join(f"{c['name']} {c['status']}" for c in d["checks"])
        lines.append(
            f"| {_label(document, d)} ({d['name']}) | {_n(d['burst_tflops'])} | {_n(d['steady_tflops'])} | "
            f"{_n(d['burst_over_steady'], '.3f')} | {_cap(d)} | {_power(d)} | {reasons} | "
            f"{_n(d['max_gpu_temperature_c'], 'g')} / {_n(d['max_memory_temperature_c'], 'g')} | "
            f"{_faults(d)} | {checks} |"
        )
    if not heads["devices"]:
        lines.append("| no device was stressed | | | | | | | | | |")
    verdict = heads["verdict"]
    lines += [
        "",
        f"Verdict: **{verdict['status']}**"
        + "".join(f"\n- {failure}" for failure in verdict["failures"])
        + (f"\n\nNot measured: {', '.join(verdict['not_measured'])}." if verdict["not_measured"] else ""),
    ]
    return "\n".join(lines) + "\n"


def burst_beside_sustained(
    document: dict[str, Any], roofline: dict[str, Any] | None, heads: dict[str, Any] | None = None
) -> str:
    """The roofline's best burst beside the stress run's steady rate, for the same dtype, each with the
    clock and power-cap state it was measured at."""
    heads = heads if heads is not None else analysis.headlines(document)
    lines = ["# Burst against sustained", ""]
    if roofline is None:
        return (
            "\n".join(
                lines
                + [
                    f"No roofline step measured {heads['dtype']} GEMMs in this bundle: no burst to "
                    "set beside the sustained rate."
                ]
            )
            + "\n"
        )
    burst = roofline_figures.headlines(roofline)
    window = burst.get("burst_best_window") or {}
    lines += [
        "| figure | TFLOPS | how | SM clock MHz | power cap |",
        "|---|---:|---|---:|---|",
        f"| roofline burst best ({burst['best_shape']}) | {_n(burst['burst_best_tflops'])} | "
        f"{_how(window)} | {_n(window.get('sm_clock_mhz'), '.0f')} | "
        f"{_cap_state(window.get('power_cap'))} |",
    ]
    records = {r.get("index"): r for r in document.get("devices", [])}
    for d in heads["devices"]:
        clock = analysis.clocks_of(records[d["index"]])["steady_sm_clock_mhz"]
        lines.append(
            f"| stress steady, {_label(document, d)} ({'x'.join(str(heads['shape'][k]) for k in 'mnk')}) | "
            f"{_n(d['steady_tflops'])} | median of the second half of {heads['seconds']:g} s | "
            f"{_n(clock, '.0f')} | {'engaged ' + _cap(d) if d['power_cap']['engaged_after_s'] is not None else _cap(d)} |"
        )
    steady = heads["min_steady_tflops"]
    best = burst["burst_best_tflops"]
    if steady and best:
        lines += [
            "",
            f"Burst best / lowest steady: {best / steady:.3f} (the burst overstates what the card sustains "
            f"by {best / steady - 1:.1%}).",
        ]
    return "\n".join(lines) + "\n"


def _how(window: dict[str, Any]) -> str:
    """How the burst was timed: windows (format 5 on) or the median call of one window (before)."""
    if isinstance(window.get("windows"), int):
        return f"median of {window['windows']} windows of {_n(window.get('window_ms'), '.3g')} ms"
    return f"median call of a {_n(window.get('window_ms'), '.3g')} ms window"


def _cap_state(value: Any) -> str:
    if isinstance(value, dict):
        return f"unknown ({value.get('unavailable')})"
    return str(value) if value else "—"


def roofline_for(dtype: str, documents: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bundle's roofline document for DTYPE: the roofline step's own dtype or one of its dtype checks,
    else (bundles before format 5) the dtype's own check step, roofline-DTYPE."""
    for step in ("roofline", f"roofline-{dtype}"):
        document = documents.get(step)
        if isinstance(document, dict) and isinstance(document.get("dtype"), str):
            found = roofline_reading.dtype_documents(document).get(dtype)
            if found is not None:
                return found
    return None


def render_in_bundle(document: dict[str, Any], documents: Mapping[str, Any]) -> str:
    """The report's stress section: the per-GPU table, then burst against sustained."""
    heads = analysis.headlines(document)
    return (
        per_gpu_table(document, heads)
        + "\n"
        + burst_beside_sustained(document, roofline_for(heads["dtype"], documents), heads)
    )
