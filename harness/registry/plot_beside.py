"""A probe command's plots beside its JSON (`dossier roofline`, `dossier stress`): the plot module
harness/present/plots/NAME.py, imported only here so that matplotlib loads only when plotting."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any


def plot_beside(name: str, document: dict[str, Any], output: Path) -> None:
    """Render NAME's plots next to OUTPUT (same stem) and say what was written, or why none was."""
    plot = importlib.import_module(f"harness.present.plots.{name}")
    try:
        written = plot.render(document, Path(output).with_suffix(""))
    except ValueError as exc:  # NothingToPlot is a ValueError: the document has nothing to draw
        print(f"no plot: {exc}", file=sys.stderr)
    else:
        print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
