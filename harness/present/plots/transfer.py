"""Transfers as figures: GB/s against copy size (log x) per direction and memory kind, one panel per
GPU (or the host on a CPU run), each link's ceiling drawn; the peer matrix as a heatmap when two or
more GPUs were measured. Every plotted figure is recomputed from the raw per-copy times.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.analysis.transfer.figures import all_series_figures, peer_matrix
from harness.present.plots._figure import new_figure, save_figure

COLOURS = {"host_to_device": "#1f77b4", "device_to_host": "#d62728", "host_to_host": "#2ca02c"}
STYLES = {"pinned": "-", "pageable": "--", "host": "-"}
MARKERS = {"alone": "o", "bidirectional": "^", "all_gpus": "s"}
SWEEP_DIRECTIONS = ("host_to_device", "device_to_host", "host_to_host")


def heatmap_note(document: dict[str, Any]) -> str | None:
    """Why there is no peer heatmap, or None when there is one."""
    peer = document.get("peer") or {}
    if peer.get("measured"):
        return None
    return f"no peer heatmap: {peer.get('why', 'peer copies not measured')}"


def note(document: dict[str, Any]) -> str | None:
    """What `dossier transfer` says beside its plots: why a GPU run has no peer heatmap."""
    return heatmap_note(document) if document.get("device") == "cuda" else None


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png/.svg (sweeps) and, with a measured peer matrix, STEM-peer.png/.svg."""
    figures = all_series_figures(document)
    paths = _sweeps(document, figures, stem)
    if heatmap_note(document) is None:
        paths += _heatmap(document, figures, stem.with_name(stem.name + "-peer"))
    return paths


def _panels(document: dict[str, Any]) -> list[tuple[Any, str]]:
    if document["device"] == "cpu":
        return [(None, f"host memory copies ({document['host']['cpu_name']}), not PCIe")]
    return [(g["torch_index"], f"cuda:{g['torch_index']} {g['name']}") for g in document["gpus"]]


def _sweeps(document: dict[str, Any], figures: dict[str, Any], stem: Path) -> list[Path]:
    panels = _panels(document)
    fig, axes = new_figure(width_in=max(8.0, 5.5 * min(len(panels), 4)), height_in=5.5)
    fig.clf()
    for i, (gpu, title) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        _one_panel(ax, document, figures, gpu, title)
    note = heatmap_note(document) if document["device"] == "cuda" else None
    if note:
        fig.text(0.01, 0.01, note, fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    return save_figure(fig, stem)


def _one_panel(ax: Any, document: dict[str, Any], figures: dict[str, Any], gpu: Any, title: str) -> None:
    ceilings = set()
    for series in document["series"]:
        if series["gpu"] != gpu or series["direction"] not in SWEEP_DIRECTIONS:
            continue
        points = figures[series["id"]]["points"]
        label = f"{series['direction'].replace('_', ' ')}, {series['memory']}, {series['concurrency']}"
        if series["numa_placement"] != "default":
            label += f", {series['numa_placement']} node"
        ax.plot(
            [p["bytes"] for p in points],
            [p["gbps"] for p in points],
            color=COLOURS[series["direction"]],
            linestyle=STYLES.get(series["memory"], "-"),
            marker=MARKERS[series["concurrency"]],
            markersize=4,
            linewidth=1.3,
            alpha=0.6 if series["numa_placement"] != "default" else 1.0,
            label=label,
        )
        ceiling = figures[series["id"]]["link"]["ceiling_gbps"]
        if ceiling:
            ceilings.add(ceiling)
    for ceiling in sorted(ceilings):
        ax.axhline(
            ceiling,
            color="black",
            linestyle=":",
            linewidth=1,
            label=f"link ceiling {ceiling:.1f} GB/s per direction (NVML gen x width)",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("GB/s (10^9 bytes/s, bytes copied once)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="best")


def _heatmap(document: dict[str, Any], figures: dict[str, Any], stem: Path) -> list[Path]:
    matrix = peer_matrix(document, figures)
    gpus = [g["torch_index"] for g in document["gpus"]]
    fig, _ = new_figure(width_in=11.0, height_in=5.0)
    fig.clf()
    starred = False
    for i, mode in enumerate(("write", "read")):
        ax = fig.add_subplot(1, 2, i + 1)
        cells = [[_cell(matrix[mode], src, dst) for dst in gpus] for src in gpus]
        values = [[value for value, _ in row] for row in cells]
        finite = [v for row in values for v in row if not math.isnan(v)]
        top = max(finite) if finite else 1.0
        image = ax.imshow(values, cmap="viridis", vmin=0, vmax=top)
        for r, row in enumerate(cells):
            for c, (value, plateau) in enumerate(row):
                text = "-" if r == c else ("n/a" if math.isnan(value) else f"{value:.0f}" + ("" if plateau else "*"))
                starred |= r != c and not plateau and not math.isnan(value)
                light_cell = not math.isnan(value) and value > 0.6 * top  # viridis is yellow at the top
                ax.text(
                    c,
                    r,
                    text,
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="black" if r == c or math.isnan(value) or light_cell else "white",
                )
        ax.set_xticks(range(len(gpus)), [f"GPU{g}" for g in gpus])
        ax.set_yticks(range(len(gpus)), [f"GPU{g}" for g in gpus])
        ax.set_xlabel("destination")
        ax.set_ylabel("source")
        driver = "source pushes" if mode == "write" else "destination pulls"
        ax.set_title(f"peer {mode} GB/s ({driver})", fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046)
    notes = ["plateau GB/s; n/a: not measured (no peer access, or not run)"]
    if starred:
        notes.append("* no plateau: the largest size's rate")
    fig.text(0.01, 0.01, "; ".join(notes), fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, stem)


def _cell(cells: dict[str, Any], src: int, dst: int) -> tuple[float, bool]:
    """(GB/s to show, whether it is a plateau): the plateau, else the largest size's rate."""
    cell = cells.get(f"{src}->{dst}")
    if not cell:
        return math.nan, False
    if cell["plateau_gbps"] is not None:
        return float(cell["plateau_gbps"]), True
    return (float(cell["rate_gbps"]), False) if cell["rate_gbps"] is not None else (math.nan, False)
