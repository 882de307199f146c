"""Saving matplotlib figures as PNG and SVG with byte-identical output for identical input."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

matplotlib.rcParams["svg.hashsalt"] = "rig-dossier"  # stable element ids in SVG
matplotlib.rcParams["svg.fonttype"] = "path"


def new_figure(width_in: float = 8.0, height_in: float = 5.5):
    return plt.subplots(figsize=(width_in, height_in), dpi=110)


def save_figure(fig, stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg with no dates or software versions in their metadata."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    fig.savefig(png, format="png", metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return [png, svg]
