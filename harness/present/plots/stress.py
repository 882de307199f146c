"""The stress run over time: GEMM TFLOPS, SM clock and power per one-second bucket (one panel each,
shared time axis), the power limit and the moment the power cap engaged marked on every panel. A
panel with no reading (no NVML on a CPU run) is not drawn; the figure says which and why. Where the
run's GPUs are a catalogue SKU (`render_for_sku`), the TFLOPS panel draws that SKU's known-good
sustained rate and the share of it acceptance asks (harness.judge.acceptance: the catalogue's
profile), so a run far under a healthy card's rate cannot look healthy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import catalogue
from harness.analysis.stress import figures as analysis
from harness.analysis.stress.telemetry import POWER_TARGET_RATIO, power_source
from harness.judge.acceptance.profile import from_catalogue
from harness.judge.acceptance.stress import SUSTAINED_GEMM
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
        found.append(
            {
                "index": record["index"],
                "name": record.get("name"),
                "t_s": [(b["start_s"] + b["end_s"]) / 2 - start for b in buckets],
                "tflops": [f["tflops"] for f in figures],
                "sm_clock_mhz": [f["sm_clock_mhz"] for f in figures],
                "power_w": [f[power] for f in figures],
            }
        )
    return found


PANELS = (
    ("tflops", "GEMM TFLOPS"),
    ("sm_clock_mhz", "SM clock (MHz, median)"),
    ("power_w", "power (W, bucket median)"),
)


def panels(lines: list[dict[str, Any]]) -> list[str]:
    """The panels with data: GEMM TFLOPS always, SM clock and power only where NVML gave a reading
    (an empty panel says nothing: `missing` says why it is not drawn)."""
    return [key for key, _ in PANELS if key == "tflops" or any(v is not None for line in lines for v in line[key])]


def missing(document: dict[str, Any], drawn: list[str]) -> str | None:
    """Why the SM clock or power panels are not drawn (no NVML reading), in one sentence; None when drawn."""
    absent = [words.split(" (")[0] for key, words in PANELS if key not in drawn]
    if not absent:
        return None
    if document["device"] != "cuda":
        return f"No {' or '.join(absent)} panel: a CPU run has no NVML to read them."
    nvml: Any = next((r.get("nvml") for r in document.get("devices", []) if isinstance(r.get("nvml"), dict)), {})
    why = nvml.get("unavailable") if isinstance(nvml, dict) else None
    return f"No {' or '.join(absent)} panel: NVML gave no reading" + (f" ({why})" if why else "") + "."


def known_good(document: dict[str, Any], sku_id: str | None) -> tuple[float, float | None, str] | None:
    """(the known-good sustained TFLOPS of the run's dtype, the share acceptance asks of it, the
    SKU's name) from the catalogue's profile of SKU_ID; None without one."""
    sku = catalogue.by_id(sku_id) if sku_id else None
    if sku is None:
        return None
    profile = from_catalogue(sku, (SUSTAINED_GEMM,))
    reference = profile.known(SUSTAINED_GEMM).get(document["settings"]["dtype"])
    if reference is None:
        return None
    share = profile.threshold("stress_sustained_min_share")
    return reference.value, share if isinstance(share, (int, float)) else None, profile.name


def render_for_sku(document: dict[str, Any], stem: Path, sku_id: str | None) -> list[Path]:
    """`render`, with SKU_ID's known-good sustained rate and acceptance's share of it drawn."""
    return _render(document, stem, known_good(document, sku_id))


def render(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg from a stress document; every figure comes from the raw data. Only
    panels with data are drawn; the figure says which are not and why."""
    return _render(document, stem, None)


def _render(document: dict[str, Any], stem: Path, reference: tuple[float, float | None, str] | None) -> list[Path]:
    """`render`, REFERENCE (`known_good`: rate, share, the SKU's name) drawn on the TFLOPS panel."""
    heads = {d["index"]: d for d in analysis.headlines(document)["devices"]}
    lines = series(document)
    drawn = panels(lines)
    fig, _ = new_figure(8.0, 2.6 * len(drawn) + 0.6)
    fig.clf()
    axes = dict(zip(drawn, fig.subplots(len(drawn), 1, sharex=True, squeeze=False)[:, 0], strict=True))
    label = "GPU" if document["device"] == "cuda" else "CPU"
    for n, line in enumerate(lines):
        colour = COLOURS[n % len(COLOURS)]
        name = f"{label}{line['index']}"
        for key, ax in axes.items():
            known = [(t, v) for t, v in zip(line["t_s"], line[key], strict=False) if v is not None]
            if known:
                ax.plot(*zip(*known, strict=True), color=colour, marker=".", label=name)
        _marks(axes, heads[line["index"]], colour, name)
    if lines:
        half = lines[0]["t_s"][len(lines[0]["t_s"]) // 2]
        axes["tflops"].axvspan(
            half - 0.5, max(lines[0]["t_s"]) + 0.5, color="#cccccc", alpha=0.3, label="steady state (second half)"
        )
    if reference is not None:
        _reference(axes["tflops"], reference)
    _label(axes, document, lines, reference[0] if reference else 0.0)
    why = missing(document, drawn)
    if why:
        fig.text(0.5, 0.01, why, ha="center", va="bottom", fontsize=8, color="grey", wrap=True)
    fig.tight_layout(rect=(0, 0.05 if why else 0, 1, 1))
    return save_figure(fig, stem)


def _marks(axes: dict[str, Any], head: dict[str, Any], colour: str, name: str) -> None:
    """The enforced power limit and the power target on the power panel; the cap's first moment on all."""
    limit = head["power"]["limit_w"]
    if limit and "power_w" in axes:
        axes["power_w"].axhline(limit, color=colour, linestyle="--", linewidth=1, label=f"{name} limit {limit:g} W")
        axes["power_w"].axhline(
            POWER_TARGET_RATIO * limit,
            color=colour,
            linestyle=":",
            linewidth=1,
            label=f"{name} target {POWER_TARGET_RATIO:.0%}",
        )
    engaged = head["power_cap"]["engaged_after_s"]
    if engaged is not None:
        for ax in axes.values():
            ax.axvline(engaged, color=colour, linestyle="-.", linewidth=1)
        axes["tflops"].plot([], [], color=colour, linestyle="-.", label=f"{name} sw_power_cap at {engaged:.1f} s")


def _reference(ax: Any, reference: tuple[float, float | None, str]) -> None:
    """The known-good sustained rate and the share of it acceptance asks, as lines across the panel."""
    value, share, name = reference
    ax.axhline(value, color="#222222", linestyle="--", linewidth=1.2, label=f"known-good {name}: {value:.4g} TFLOPS")
    if share is not None:
        ax.axhline(
            share * value,
            color="#c44e52",
            linestyle=":",
            linewidth=1.2,
            label=f"acceptance asks at least {share:.0%}: {share * value:.4g} TFLOPS",
        )


def _label(axes: dict[str, Any], document: dict[str, Any], lines: list[dict[str, Any]], floor: float) -> None:
    settings = document["settings"]
    shape = "x".join(str(settings["shape"][d]) for d in "mnk")
    axes["tflops"].set_title(f"Stress: {settings['dtype']} GEMM {shape}, {settings['seconds']:g} s, per 1 s bucket")
    for key, words in PANELS:
        if key in axes:
            axes[key].set_ylabel(words)
    bottom = axes[list(axes)[-1]]
    bottom.set_xlabel("seconds since the GEMM phase began (bucket midpoints)")
    for ax in axes.values():
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    top = max([floor, *(v for line in lines for v in line["tflops"])])
    axes["tflops"].set_ylim(0, 1.1 * top if top else 1)
    bottom.set_xlim(left=0)
