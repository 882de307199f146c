"""The distribution of each headline rate across the fleet, outliers marked (PNG and SVG).

One figure per metric the registry marks as a headline rate: a histogram of the verified nodes'
values for each SKU, the SKU's median, the band within which no node is flagged (10 % either
side of the median), and every flagged node as a red mark, the first ones named. Rendered with
the project's figure helper (harness/present/plots/_figure.py): the same fleet.json gives the
same bytes. matplotlib is imported only here.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

from harness.probes.scratch import scratch

MAX_NAMED = 8  # outliers named on a plot; every one is marked and listed in fleet.md
COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf")


def headline_metrics(document: dict[str, Any]) -> list[str]:
    return [m for m, info in document["metrics"].items() if info.get("headline") and info.get("kind") == "rate"]


def _numbers(rows: dict[str, Any]) -> list[tuple[str, float, bool]]:
    return [
        (node, float(row["value"]), bool(row.get("flagged")))
        for node, row in rows["nodes"].items()
        if isinstance(row.get("value"), (int, float)) and not isinstance(row.get("value"), bool)
    ]


def _hist_range(values: list[float]) -> tuple[float, float] | None:
    """None (the data's own range) unless the values are (nearly) all equal: numpy cannot cut a
    range narrower than its float spacing into bins, so such a metric gets 1% either side."""
    low, high = min(values), max(values)
    if high - low > max(abs(low), abs(high)) * 1e-9:
        return None
    span = max(abs(high) * 0.01, 1e-9)
    return low - span, high + span


def _draw(ax: Any, metric: str, info: dict[str, Any], groups: dict[str, Any]) -> bool:
    drawn = False
    for colour, (sku, rows) in zip(itertools.cycle(COLOURS), sorted(groups.items())):
        points = _numbers(rows)
        if not points:
            continue
        drawn = True
        values = [v for _, v, _ in points]
        ax.hist(
            values,
            bins=min(60, max(10, len(values) // 10)),
            range=_hist_range(values),
            color=colour,
            alpha=0.6,
            label=f"{sku}: {len(values)} nodes",
        )
        median = rows["median"]
        ax.axvline(median, color=colour, linewidth=1.2, label=f"{sku} median {median:.4g} {info['unit']}")
        ax.axvspan(median * 0.9, median * 1.1, color=colour, alpha=0.08)
        flagged = sorted((v, n) for n, v, f in points if f)
        for i, (value, node) in enumerate(flagged):
            ax.axvline(value, color="#d62728", linewidth=0.8, linestyle="--")
            if i < MAX_NAMED:
                ax.annotate(
                    node,
                    (value, 0),
                    xytext=(2, 8 + 12 * (i % 6)),
                    textcoords="offset points",
                    rotation=0,
                    fontsize=7,
                    color="#d62728",
                )
        if flagged:
            ax.plot([], [], color="#d62728", linestyle="--", label=f"{sku}: {len(flagged)} outlier(s)")
    ax.set_xlabel(f"{metric} ({info['unit']})")
    ax.set_ylabel("nodes")
    ax.set_title(f"{info['description']}\nshaded: within 10 % of the median (never flagged)", fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # no outlier and no labelled series: no empty legend box
        ax.legend(fontsize=7, loc="upper left")
    return drawn


def render(document: dict[str, Any]) -> dict[str, bytes]:
    """plots/METRIC.png and plots/METRIC.svg for each headline rate some node measured."""
    import matplotlib.pyplot as plt

    from harness.present.plots._figure import new_figure, save_figure  # matplotlib only here

    members: dict[str, bytes] = {}
    with scratch("dossier-fleet-plots-") as tmp:
        for metric in headline_metrics(document):
            fig, ax = new_figure(8.0, 4.5)
            try:
                drawn = _draw(ax, metric, document["metrics"][metric], document["table"][metric]["groups"])
            except Exception as exc:  # noqa: BLE001 - a plot never costs the fleet bundle; the table has every value
                print(f"fleet collect: no plot of {metric}: {type(exc).__name__}: {exc}", file=sys.stderr)
                drawn = False
            if not drawn:
                plt.close(fig)
                continue
            for path in save_figure(fig, Path(tmp) / metric):
                members[f"plots/{path.name}"] = path.read_bytes()
    return members
