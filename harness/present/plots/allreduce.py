"""All-reduce curves from allreduce.json: busbw and time against size, log-log, knees marked.

Rendered on the host from the raw document; every figure drawn is recomputed by
harness.analysis.allreduce (never read from the probe's own summary).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.allreduce import figures as ar
from harness.present.plots import NothingToPlot
from harness.present.plots._figure import new_figure, save_figure
from harness.present.plots._labels import place_labels

STYLE = {"normal": "-", "p2p_disabled": "--"}
MARKERS = ["o", "s", "^", "D", "v"]


def _label(run: dict[str, Any]) -> str:
    return f"{run['curve']} n={run['world_size']}" + (" (stopped early)" if run.get("failure") else "")


def _size(nbytes: float) -> str:
    """A fitted size in binary units, three figures: 451 KiB, 0.982 MiB, 10.3 MiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= 0.95 * scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.3g} B"


def nothing_measured(document: dict[str, Any]) -> str | None:
    """Why there is no curve to draw (one sentence), or None when some run has points."""
    if any(run.get("points") for run in document.get("runs", [])):
        return None
    limitations = [str(item.get("what")) for item in document.get("limitations", []) if isinstance(item, dict)]
    because = f": {limitations[0]}" if limitations else ""
    return f"No all-reduce curve was measured, so there is nothing to plot{because}."


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg: left busbw vs size, right time vs size with the alpha-beta fit.
    Raises NothingToPlot (no files) when no run has a point, e.g. on one GPU."""
    why = nothing_measured(document)
    if why is not None:
        raise NothingToPlot(why)
    fig, single = new_figure(12.0, 5.0)
    single.remove()  # new_figure gives one axes; this figure has two side by side
    bw_ax, t_ax = fig.subplots(1, 2)
    worlds = sorted({r["world_size"] for r in document.get("runs", [])})
    knees: list[tuple[str, float, float, str]] = []  # (label, size, modelled time there, colour)
    for run in document.get("runs", []):
        points = sorted(run.get("points", []), key=lambda p: p["bytes"])
        if points:
            knees += _draw_run(bw_ax, t_ax, run, points, MARKERS[worlds.index(run["world_size"]) % len(MARKERS)])
    backend = document.get("backend", "?")
    bw_ax.set(
        xlabel="buffer size (bytes)",
        ylabel="busbw (GB/s)",
        title=f"all-reduce busbw ({backend}); dotted: alpha-beta knee, x: half plateau",
    )
    t_ax.set(
        xlabel="buffer size (bytes)", ylabel="time per call (us)", title="time per call; dotted: t = alpha + s/beta"
    )
    legends = []
    for ax in (bw_ax, t_ax):
        ax.grid(True, which="both", linewidth=0.3)
        if ax.get_legend_handles_labels()[0]:
            legends.append(ax.legend(fontsize=7, loc="upper left"))
    fig.tight_layout()
    place_labels(
        t_ax,
        [(label, x, y) for label, x, y, _ in knees],
        avoid=legends[1:],
        lines=[ln for ln in t_ax.get_lines() if ln.get_linestyle() != ":"],
        colors=[c for *_, c in knees],
    )
    return save_figure(fig, stem)


def _draw_run(
    bw_ax: Any, t_ax: Any, run: dict[str, Any], points: list[dict[str, Any]], marker: str
) -> list[tuple[str, float, float, str]]:
    """One run's busbw and time curves (POINTS: its points by size), its knee (dotted, with the fitted
    model) and its half plateau (x); returns what to label on the time panel: the knee where one was
    fitted, as (label, size, modelled time there, colour)."""
    n = run["world_size"]
    sizes = [p["bytes"] for p in points]
    figs = [ar.point_figures(p, n) for p in points]
    (line,) = bw_ax.loglog(
        sizes, [f["busbw_gbps"] for f in figs], STYLE[run["curve"]], marker=marker, markersize=3, label=_label(run)
    )
    t_ax.loglog(
        sizes,
        [f["time_us"] for f in figs],
        STYLE[run["curve"]],
        marker=marker,
        markersize=3,
        color=line.get_color(),
        label=_label(run),
    )
    curve = ar.curve_figures(run)
    knees = []
    if curve["knee_bytes"] is not None:
        knee = curve["knee_bytes"]
        for ax in (bw_ax, t_ax):
            ax.axvline(knee, color=line.get_color(), linestyle=":", linewidth=1)
        model = [curve["alpha_us"] + s / (curve["beta_gbps"] * 1e3) for s in sizes]
        t_ax.loglog(sizes, model, ":", color=line.get_color(), linewidth=1)
        knees.append(
            (f"knee {_size(knee)}", knee, curve["alpha_us"] + knee / (curve["beta_gbps"] * 1e3), line.get_color())
        )
    if curve["half_plateau_bytes"] is not None:
        half = curve["half_plateau_bytes"]
        bw_ax.plot([half], [curve["plateau_busbw_gbps"] / 2], marker="x", color=line.get_color(), markersize=9)
    return knees
