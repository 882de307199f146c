"""The roofline plot from roofline.json: log-log, both roofs, the ridge, every point labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.roofline.model import attainable_tflops
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
    "user": {"marker": "D", "color": "#8172b3", "name": "user"},
    "fusion": {"marker": "s", "color": "#937860", "name": "elementwise chain"},
}


def points(document: dict[str, Any]) -> list[dict[str, Any]]:
    """(label, kind, intensity, achieved TFLOPS) of every measured GEMM and fusion variant."""
    predictions = {p["label"]: p for p in document["predictions"]["shapes"]}
    found = []
    for shape in document["measurements"]["shapes"]:
        if shape.get("status") == "measured":
            p = predictions[shape["label"]]
            found.append({"label": shape["label"], "kind": p["kind"], "ai": p["ai_flop_per_byte"],
                          "tflops": p["flops"] / shape["median_s"] / 1e12})
    fusion = document.get("fusion")
    if isinstance(fusion, dict) and "unfused" in fusion:
        for variant in ("unfused", "fused"):
            timed = fusion.get(variant)
            if isinstance(timed, dict) and "median_s" in timed:
                found.append({"label": f"{variant} chain", "kind": "fusion",
                              "ai": fusion[f"{variant}_ai_flop_per_byte"],
                              "tflops": fusion["flops"] / timed["median_s"] / 1e12})
    return found


def figure(document: dict[str, Any]):
    """The roofline figure (not saved); the roofs must be known (numbers) to draw them."""
    roofs = document["roofs"]
    peak, bandwidth = roofs["peak_tflops"], roofs["bandwidth_gbps"]
    if not isinstance(peak, (int, float)):
        raise NothingToPlot(f"No roofline plot: the compute roof is unknown ({value_text('peak_tflops', peak)}).")
    found = points(document)
    ridge = peak * 1e12 / (bandwidth * 1e9)
    ais = [p["ai"] for p in found] + [ridge]
    low, high = min(ais) / 4, max(ais) * 4
    fig, ax = new_figure(10, 6.5)
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    roof, = ax.plot(xs, [attainable_tflops(x, peak, bandwidth) for x in xs], color="black", linewidth=1.6,
                    label=f"roof: {number(bandwidth)} GB/s, {number(peak)} TFLOPS")
    ax.axhline(peak, color="grey", linestyle=":", linewidth=0.8)
    ax.axvline(ridge, color="grey", linestyle="--", linewidth=1.0, label=f"ridge {ridge:.1f} FLOP/B")
    seen = set()
    for p in found:
        style = STYLES[p["kind"]]
        ax.scatter([p["ai"]], [p["tflops"]], marker=style["marker"], color=style["color"], s=46, zorder=3,
                   label=None if p["kind"] in seen else style["name"])
        seen.add(p["kind"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    achieved = [p["tflops"] for p in found if p["tflops"] > 0] or [peak]
    ax.set_ylim(min(achieved) / 3, peak * 2.5)  # room above the roof for the compute-bound labels
    ax.set_xlabel("arithmetic intensity (FLOP/byte, fewest bytes)")
    ax.set_ylabel("achieved TFLOPS")
    device = document["device_facts"].get("name", document["device"])
    ax.set_title(f"Roofline: {device}, {document['dtype']} GEMMs (memory roof: {roofs['bandwidth_source']})",
                 fontsize=9)
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    legend = ax.legend(fontsize=7.5, loc="lower right")
    place_labels(ax, [(p["label"], p["ai"], p["tflops"]) for p in found], avoid=[legend], lines=[roof])
    return fig


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg."""
    return save_figure(figure(document), stem)
