"""The stress run over time: GEMM TFLOPS, SM clock and power per one-second bucket (one panel each,
shared time axis), the power limit and the moment the power cap engaged marked on every panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.stress import figures as analysis
from harness.analysis.stress.telemetry import POWER_TARGET_RATIO, power_source
from harness.present.plots._figure import new_figure, save_figure

COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def series(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per device: bucket midpoints (s after the GEMM phase began) and each bucket's recomputed figures."""
    flop = document["settings"]["flop_per_gemm"]
    found = []
    for record in document["devices"]:
        buckets = analysis.buckets_of(record)
        if not buckets:
            continue
        start = record["gemm"]["started_s"]
        samples = analysis.samples_of(record)
        figures = [analysis.bucket_figures(b, samples, flop) for b in buckets]
        power = power_source(samples)[0]  # the one-second average where NVML gives it
        found.append({"index": record["index"], "name": record.get("name"),
                      "t_s": [(b["start_s"] + b["end_s"]) / 2 - start for b in buckets],
                      "tflops": [f["tflops"] for f in figures],
                      "sm_clock_mhz": [f["sm_clock_mhz"] for f in figures],
                      "power_w": [f[power] for f in figures]})
    return found


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg from a stress document; every figure comes from the raw data."""
    heads = {d["index"]: d for d in analysis.headlines(document)["devices"]}
    fig, axes = new_figure(8.0, 8.0)
    fig.clf()
    axes = fig.subplots(3, 1, sharex=True)
    label = "GPU" if document["device"] == "cuda" else "CPU"
    lines = series(document)
    for n, line in enumerate(lines):
        colour = COLOURS[n % len(COLOURS)]
        head = heads[line["index"]]
        name = f"{label}{line['index']}"
        axes[0].plot(line["t_s"], line["tflops"], color=colour, marker=".", label=name)
        for ax, key in ((axes[1], "sm_clock_mhz"), (axes[2], "power_w")):
            known = [(t, v) for t, v in zip(line["t_s"], line[key], strict=False) if v is not None]
            if known:
                ax.plot(*zip(*known, strict=True), color=colour, marker=".", label=name)
        _marks(axes, head, colour, name)
    if lines:
        half = lines[0]["t_s"][len(lines[0]["t_s"]) // 2]
        axes[0].axvspan(half - 0.5, max(lines[0]["t_s"]) + 0.5, color="#cccccc", alpha=0.3,
                        label="steady state (second half)")
    _label(axes, document, label, lines)
    fig.tight_layout()
    return save_figure(fig, stem)


def _marks(axes: Any, head: dict[str, Any], colour: str, name: str) -> None:
    """The enforced power limit and the power target on the power panel; the cap's first moment on all."""
    limit = head["power"]["limit_w"]
    if limit:
        axes[2].axhline(limit, color=colour, linestyle="--", linewidth=1, label=f"{name} limit {limit:g} W")
        axes[2].axhline(POWER_TARGET_RATIO * limit, color=colour, linestyle=":", linewidth=1,
                        label=f"{name} target {POWER_TARGET_RATIO:.0%}")
    engaged = head["power_cap"]["engaged_after_s"]
    if engaged is not None:
        for ax in axes:
            ax.axvline(engaged, color=colour, linestyle="-.", linewidth=1)
        axes[0].plot([], [], color=colour, linestyle="-.", label=f"{name} sw_power_cap at {engaged:.1f} s")


def _label(axes: Any, document: dict[str, Any], label: str, lines: list[dict[str, Any]]) -> None:
    settings = document["settings"]
    shape = "x".join(str(settings["shape"][d]) for d in "mnk")
    axes[0].set_title(f"Stress: {settings['dtype']} GEMM {shape}, {settings['seconds']:g} s, per 1 s bucket")
    axes[0].set_ylabel("GEMM TFLOPS")
    axes[1].set_ylabel("SM clock (MHz, median)")
    axes[2].set_ylabel("power (W, bucket median)")
    axes[2].set_xlabel("seconds since the GEMM phase began (bucket midpoints)")
    for ax, what in ((axes[1], "SM clock"), (axes[2], "power")):
        if not ax.lines:
            ax.text(0.5, 0.5, f"no {what} readings: no NVML on a {label} run", transform=ax.transAxes,
                    ha="center", va="center", color="grey")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    top = max((v for line in lines for v in line["tflops"]), default=0)
    axes[0].set_ylim(0, 1.1 * top if top else 1)
    axes[2].set_xlim(left=0)
