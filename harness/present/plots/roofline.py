"""The roofline plot from roofline.json: log-log, both roofs, the ridge, every point labelled at its headline
rate (a launch-bound shape's kernel-only rate from probe contract 4 on, its eager rate, the host's launch
rate, drawn hollow below it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.roofline.model import attainable_tflops
from harness.analysis.roofline.timings import burst_windows
from harness.analysis.timing import KERNEL_ONLY
from harness.analysis.units import number, value_text
from harness.present.plots import NothingToPlot
from harness.present.plots._figure import new_figure, save_figure
from harness.present.plots._labels import place_labels

# One marker and colour per kind of point, so prefill and decode read apart at a glance.
STYLES = {
    "square": {"marker": "o", "color": "#4c72b0", "name": "square"},
    "prefill": {"marker": "^", "color": "#dd8452", "name": "prefill (M 2048-8192)"},
    "decode": {"marker": "v", "color": "#55a868", "name": "decode (M 1-64)"},
    "awkward": {"marker": "X", "color": "#c44e52", "name": "awkward"},
    "reference": {"marker": "P", "color": "#2f4b7c", "name": "burst-best shape"},
    "user": {"marker": "D", "color": "#8172b3", "name": "user"},
    "fusion": {"marker": "s", "color": "#937860", "name": "elementwise chain"},
}


EAGER_STYLE = {"marker": "o", "facecolors": "none", "edgecolors": "#555555", "s": 30, "linewidths": 0.9}
EAGER_NAME = "eager call on this host (launch-bound: the host's launch rate)"


def points(document: dict[str, Any]) -> list[dict[str, Any]]:
    """(label, kind, intensity, headline TFLOPS) of every measured GEMM (harness.analysis.roofline: a
    launch-bound shape's kernel-only rate from probe contract 4 on) and fusion variant."""
    predictions = {p["label"]: p for p in document["predictions"]["shapes"]}
    found = []
    for row in burst_windows(document):
        p = predictions[row["label"]]
        if row["burst_tflops"] is not None:
            found.append(
                {"label": row["label"], "kind": p["kind"], "ai": p["ai_flop_per_byte"], "tflops": row["burst_tflops"]}
            )
    fusion = document.get("fusion")
    if isinstance(fusion, dict) and "unfused" in fusion:
        for variant in ("unfused", "fused"):
            timed = fusion.get(variant)
            if isinstance(timed, dict) and "median_s" in timed:
                found.append(
                    {
                        "label": f"{variant} chain",
                        "kind": "fusion",
                        "ai": fusion[f"{variant}_ai_flop_per_byte"],
                        "tflops": fusion["flops"] / timed["median_s"] / 1e12,
                    }
                )
    return found


def eager_points(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Beside each kernel-only headline, the shape's eager rate: where an eager caller on this host lands."""
    predictions = {p["label"]: p for p in document["predictions"]["shapes"]}
    return [
        {
            "label": row["label"],
            "ai": predictions[row["label"]]["ai_flop_per_byte"],
            "tflops": row["eager_tflops"],
            "kernel_tflops": row["burst_tflops"],
        }
        for row in burst_windows(document)
        if row.get("rate_basis") == KERNEL_ONLY and row.get("eager_tflops") and row["burst_tflops"]
    ]


def figure(document: dict[str, Any]):
    """The roofline figure (not saved); the roofs must be known (numbers) to draw them."""
    roofs = document["roofs"]
    peak, bandwidth = roofs["peak_tflops"], roofs["bandwidth_gbps"]
    if not isinstance(peak, (int, float)):
        raise NothingToPlot(f"No roofline plot: the compute roof is unknown ({value_text('peak_tflops', peak)}).")
    found, eager = points(document), eager_points(document)
    ridge = peak * 1e12 / (bandwidth * 1e9)
    ais = [p["ai"] for p in found] + [ridge]
    low, high = min(ais) / 4, max(ais) * 4
    fig, ax = new_figure(10, 6.5)
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    (roof,) = ax.plot(
        xs,
        [attainable_tflops(x, peak, bandwidth) for x in xs],
        color="black",
        linewidth=1.6,
        label=f"roof: {number(bandwidth)} GB/s, {number(peak)} TFLOPS",
    )
    ax.axhline(peak, color="grey", linestyle=":", linewidth=0.8)
    ax.axvline(ridge, color="grey", linestyle="--", linewidth=1.0, label=f"ridge {ridge:.1f} FLOP/B")
    connectors = _draw_points(ax, found, eager)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    achieved = [p["tflops"] for p in found + eager if p["tflops"] > 0] or [peak]
    ax.set_ylim(min(achieved) / 3, peak * 2.5)  # room above the roof for the compute-bound labels
    ax.set_xlabel("arithmetic intensity (FLOP/byte, fewest bytes)")
    ax.set_ylabel("achieved TFLOPS")
    device = document["device_facts"].get("name", document["device"])
    ax.set_title(
        f"Roofline: {device}, {document['dtype']} GEMMs (memory roof: {roofs['bandwidth_source']})", fontsize=9
    )
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    legend = ax.legend(fontsize=7.5, loc="lower right" if not eager else "best")  # "best": clear of the eager points
    place_labels(
        ax,
        [(p["label"], p["ai"], p["tflops"]) for p in found],
        avoid=[legend],
        lines=[roof, *connectors],
        markers=[(p["ai"], p["tflops"]) for p in eager],
    )
    return fig


def _draw_points(ax: Any, found: list[dict[str, Any]], eager: list[dict[str, Any]]) -> list[Any]:
    """Every headline point in its kind's style (one legend entry a kind), and each eager point hollow
    below its kernel-only headline; returns the lines joining them, which no label may cross."""
    seen = set()
    for p in found:
        style = STYLES[p["kind"]]
        ax.scatter(
            [p["ai"]],
            [p["tflops"]],
            marker=style["marker"],
            color=style["color"],
            s=46,
            zorder=3,
            label=None if p["kind"] in seen else style["name"],
        )
        seen.add(p["kind"])
    connectors: list[Any] = []
    for i, p in enumerate(eager):
        connectors += ax.plot(
            [p["ai"], p["ai"]], [p["tflops"], p["kernel_tflops"]], color="#999999", linewidth=0.6, zorder=2
        )
        ax.scatter([p["ai"]], [p["tflops"]], zorder=3, label=EAGER_NAME if i == 0 else None, **EAGER_STYLE)
    return connectors


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg."""
    return save_figure(figure(document), stem)
