"""The bandwidth sweep as a figure: GB/s against buffer size (log x), plateau band, cache size, peaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.bandwidth.figures import KERNELS, headlines
from harness.present.plots._figure import new_figure, save_figure


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg from a bandwidth document; the figures come from the raw data."""
    heads = headlines(document)
    fig, ax = new_figure()
    _draw_sweep(ax, document)
    _draw_plateau(ax, document["sweep"], heads)
    repeats = heads["repeat_medians_gbps"]
    ax.scatter(
        [heads["repeat_size_mib"]] * len(repeats),
        repeats,
        marker="x",
        color="black",
        zorder=4,
        label=f"repeats (spread {heads['repeat_spread']:.1%}, {heads['repeat_verdict']})",
    )
    _draw_references(ax, document, heads)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("buffer size (MiB)")
    ax.set_ylabel("GB/s (10^9 bytes/s, reads + writes)")
    ax.set_title(f"{document['kernel']} bandwidth on {document['device_name']} ({document['device']})")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return save_figure(fig, stem)


def _draw_sweep(ax: Any, document: dict[str, Any]) -> None:
    """The sweep's medians as a line, each point marked by its marks (cache-resident, launch-bound)."""
    sweep = document["sweep"]
    sizes = [p["size_mib"] for p in sweep]
    values = [p["median_gbps"] for p in sweep]
    ax.plot(sizes, values, color="#1f77b4", linewidth=1.5, zorder=2, label=f"{document['kernel']} sweep (median)")
    for marks, style in (
        ((), dict(marker="o", color="#1f77b4", label=None)),
        (("cache_resident",), dict(marker="s", color="#ff7f0e", label="cache-resident")),
        (("launch_bound",), dict(marker="^", color="#d62728", label="launch-bound")),
        (
            ("cache_resident", "launch_bound"),
            dict(marker="D", color="#9467bd", label="cache-resident and launch-bound"),
        ),
    ):
        chosen = [p for p in sweep if tuple(sorted(p["marks"])) == marks]
        if chosen:
            ax.scatter(
                [p["size_mib"] for p in chosen],
                [p["median_gbps"] for p in chosen],
                marker=style["marker"],
                color=style["color"],
                zorder=3,
                label=style["label"],
            )


def _draw_plateau(ax: Any, sweep: list[dict[str, Any]], heads: dict[str, Any]) -> None:
    """The plateau (when there is one): the band of its points' medians and a line at its rate."""
    if heads["plateau_gbps"] is None:
        return
    on = [p["median_gbps"] for p in sweep if p["size_mib"] in heads["plateau_sizes_mib"]]
    ax.axhspan(min(on), max(on), color="#2ca02c", alpha=0.15, zorder=1)
    ax.axhline(
        heads["plateau_gbps"],
        color="#2ca02c",
        linewidth=1.2,
        label=f"plateau {heads['plateau_gbps']:.0f} GB/s "
        f"({min(heads['plateau_sizes_mib']):g}-{max(heads['plateau_sizes_mib']):g} MiB)",
    )


def _draw_references(ax: Any, document: dict[str, Any], heads: dict[str, Any]) -> None:
    """What the sweep is read against, where known: the buffer size that fills the cache, the published
    peak and the known-good rate."""
    cache = document["cache"]
    if isinstance(cache.get("size_mib"), (int, float)):
        spec = KERNELS[document["kernel"]]
        at = cache["size_mib"] / (spec["reads"] + spec["writes"])  # the buffer size whose traffic fills it
        ax.axvline(
            at,
            color="grey",
            linestyle=":",
            label=f"{cache['level']} {cache['size_mib']:g} MiB (filled at {at:g} MiB per buffer)",
        )
    if heads["spec_gbps"] is not None:
        ax.axhline(
            heads["spec_gbps"],
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"published peak {heads['spec_gbps']:g} GB/s",
        )
    if heads["known_good_gbps"] is not None:
        ax.axhline(
            heads["known_good_gbps"],
            color="#8c564b",
            linestyle="-.",
            linewidth=1,
            label=f"known-good {heads['known_good_gbps']:g} GB/s",
        )
