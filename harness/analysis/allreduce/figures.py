"""All-reduce curves: byte counting, the alpha-beta knee, the half-plateau size, the ring
prediction and the normal-versus-control comparison. Standard library only.

Conventions (nccl-tests, doc/PERFORMANCE.md, "AllReduce" section):
  algbw = S / t                      S = bytes in the buffer, t = time of one call
  busbw = algbw * 2(n-1)/n           the bus factor of a ring all-reduce on n ranks
GB/s means 1e9 bytes per second, as in nccl-tests.

The startup-to-bandwidth knee comes from the alpha-beta model t(s) = alpha + s/beta: the size
where the two terms are equal is s* = alpha * beta. At s* the model's algbw is exactly beta/2,
so the empirical "first size at half the plateau" should land within a factor of two of s*
when the model fits.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

BUS_FACTOR_FORMULA = "2(n-1)/n"
BUS_FACTOR_SOURCE = (
    "nccl-tests doc/PERFORMANCE.md, AllReduce: busBw = algBw * 2(n-1)/n "
    "(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)"
)
FIT_METHOD = (
    "least squares of t(s) = alpha + s/beta weighted by 1/t^2 (relative residuals), "
    "so microsecond and millisecond points count alike"
)
PLATEAU_POINTS = 3  # the plateau is the median busbw of the largest sizes measured
CURVES = ("normal", "p2p_disabled")
REL_TOL = 1e-6  # recomputation tolerance for discrepancies (figures are stored unrounded)

_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(I?B)?\s*$", re.I)


class FitError(ValueError):
    """The alpha-beta model cannot be fitted to these points; the message says why."""


# --- sizes -------------------------------------------------------------------------------


def parse_size(text: str | int) -> int:
    """`8`, `64K`, `64M`, `1G`, `1GiB`, `512MB` -> bytes (binary units, as nccl-tests' -b/-e)."""
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE_RE.match(str(text))
        if not match:
            raise ValueError(
                f"cannot read {text!r} as a size: use bytes or a binary unit, e.g. 8, 64K, 64M, 1G (K=1024)"
            )
        value = int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
    if value <= 0:
        raise ValueError(f"a size must be positive, got {text!r}")
    return value


def format_size(nbytes: int) -> str:
    """1073741824 -> '1 GiB', 12 -> '12 B'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def sweep_sizes(min_bytes: int, max_bytes: int, element_bytes: int = 4) -> list[int]:
    """min, 2*min, 4*min, ... <= max (nccl-tests' -f 2). Raises ValueError for impossible ranges."""
    if min_bytes > max_bytes:
        raise ValueError(f"min size {format_size(min_bytes)} is larger than max size {format_size(max_bytes)}")
    if min_bytes % element_bytes:
        raise ValueError(f"min size {min_bytes} B is not a whole number of {element_bytes}-byte elements")
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


# --- formulas ----------------------------------------------------------------------------


def bus_factor(world_size: int) -> float:
    """Ring all-reduce traffic per rank, in units of the buffer size: 2(n-1)/n."""
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    return 2.0 * (world_size - 1) / world_size


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def busbw_gbps(algbw: float, world_size: int) -> float:
    return algbw * bus_factor(world_size)


# --- the alpha-beta fit ------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaBetaFit:
    """t(s) = alpha_s + s / beta_bytes_per_s."""

    alpha_s: float
    beta_bytes_per_s: float
    rel_rms_residual: float  # sqrt(mean(((t - model)/t)^2)), a fraction

    @property
    def knee_bytes(self) -> float:
        """The size where startup time equals transfer time: alpha * beta."""
        return self.alpha_s * self.beta_bytes_per_s

    def time_s(self, nbytes: float) -> float:
        return self.alpha_s + nbytes / self.beta_bytes_per_s


def fit_alpha_beta(sizes: list[int], times_s: list[float]) -> AlphaBetaFit:
    """Weighted least squares (weights 1/t^2) of t = alpha + s/beta, on centred data."""
    if len(sizes) != len(times_s):
        raise ValueError("sizes and times differ in length")
    if len(set(sizes)) < 2:
        raise FitError(f"needs at least 2 distinct sizes, got {len(set(sizes))}")
    if any(t <= 0 for t in times_s):
        raise FitError("a measured time is not positive")
    weights = [1.0 / t**2 for t in times_s]
    total = sum(weights)
    s_mean = sum(w * s for w, s in zip(weights, sizes, strict=True)) / total
    t_mean = sum(w * t for w, t in zip(weights, times_s, strict=True)) / total
    sxx = sum(w * (s - s_mean) ** 2 for w, s in zip(weights, sizes, strict=True))
    sxy = sum(w * (s - s_mean) * (t - t_mean) for w, s, t in zip(weights, sizes, times_s, strict=True))
    slope = sxy / sxx
    alpha = t_mean - slope * s_mean
    if slope <= 0:
        raise FitError("time does not grow with size (fitted 1/beta <= 0): no bandwidth regime measured")
    if alpha <= 0:
        raise FitError(
            f"fitted alpha is {alpha * 1e6:.3g} us (<= 0): no startup regime resolved; measure smaller sizes"
        )
    residuals = [((t - alpha - slope * s) / t) ** 2 for s, t in zip(sizes, times_s, strict=True)]
    return AlphaBetaFit(alpha, 1.0 / slope, math.sqrt(sum(residuals) / len(residuals)))


# --- per-curve figures -------------------------------------------------------------------


def rank_medians_us(point: dict[str, Any]) -> list[float]:
    """Each rank's median call time (us): from its per-call times where the point kept them
    (contract 2 on); a contract 1 point kept only the medians, which are then taken as stated."""
    times = point.get("rank_times_us")
    if isinstance(times, list) and times:
        return [statistics.median(t) for t in times]
    return list(point["rank_median_time_us"])


def medians_source(document: dict[str, Any]) -> str | None:
    """Where the per-rank medians come from: every point's per-call times, or (contract 1) the
    stated medians; None when no point was measured."""
    points = [p for run in document.get("runs", []) for p in run.get("points", [])]
    if not points:
        return None
    if all(isinstance(p.get("rank_times_us"), list) for p in points):
        return "recomputed from every rank's per-call times"
    return (
        "not recomputable from per-call times: this document (contract "
        f"{document.get('contract_version')}) kept only the per-rank medians, checked as stated"
    )


def point_figures(point: dict[str, Any], world_size: int) -> dict[str, float]:
    """time_us (max over ranks of per-rank medians), algbw and busbw, from the per-call times."""
    time_us = max(rank_medians_us(point))
    algbw = algbw_gbps(point["bytes"], time_us * 1e-6)
    return {"time_us": time_us, "algbw_gbps": algbw, "busbw_gbps": busbw_gbps(algbw, world_size)}


def plateau(sizes: list[int], busbw: list[float]) -> dict[str, Any]:
    """Plateau = median busbw of the largest PLATEAU_POINTS sizes; first size reaching half of it."""
    if not sizes:
        raise FitError("no points")
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    top = order[-PLATEAU_POINTS:]
    level = statistics.median(busbw[i] for i in top)
    half = next(sizes[i] for i in order if busbw[i] >= level / 2)
    return {
        "plateau_busbw_gbps": level,
        "plateau_sizes_bytes": sorted(sizes[i] for i in top),
        "half_plateau_bytes": half,
    }


def curve_figures(run: dict[str, Any]) -> dict[str, Any]:
    """Fit, plateau and end-of-curve figures of one run, recomputed from its raw points.

    Values that cannot be computed are None, with the reason under `*_reason`.
    """
    n = run["world_size"]
    points = sorted(run.get("points", []), key=lambda p: p["bytes"])
    figures = [point_figures(p, n) for p in points]
    sizes = [p["bytes"] for p in points]
    out: dict[str, Any] = {
        "points": len(points),
        "knee_bytes": None,
        "alpha_us": None,
        "beta_gbps": None,
        "beta_bus_gbps": None,
        "fit_rel_rms_residual": None,
        "fit_reason": None,
        "half_plateau_bytes": None,
        "plateau_busbw_gbps": None,
        "plateau_sizes_bytes": None,
        "plateau_reason": None,
        "busbw_at_max_gbps": figures[-1]["busbw_gbps"] if figures else None,
        "max_bytes": sizes[-1] if sizes else None,
    }
    try:
        fit = fit_alpha_beta(sizes, [f["time_us"] * 1e-6 for f in figures])
        out.update(
            knee_bytes=fit.knee_bytes,
            alpha_us=fit.alpha_s * 1e6,
            beta_gbps=fit.beta_bytes_per_s / 1e9,
            beta_bus_gbps=fit.beta_bytes_per_s / 1e9 * bus_factor(n),
            fit_rel_rms_residual=fit.rel_rms_residual,
        )
    except FitError as exc:
        out["fit_reason"] = str(exc)
    try:
        found = plateau(sizes, [f["busbw_gbps"] for f in figures])
        out.update(
            half_plateau_bytes=found["half_plateau_bytes"],
            plateau_busbw_gbps=found["plateau_busbw_gbps"],
            plateau_sizes_bytes=found["plateau_sizes_bytes"],
        )
    except FitError as exc:
        out["plateau_reason"] = str(exc)
    return out


# --- the ring prediction -----------------------------------------------------------------


def ring_prediction(world_sizes: list[int]) -> dict[str, Any]:
    """Per world size, the bytes each rank moves per buffer byte, and the algbw ratio it implies.

    In the bandwidth regime a ring all-reduce takes t = 2(n-1)/n * S / B for per-rank link
    bandwidth B, so busbw = B for every n and algbw(n) / algbw(m) = factor(m) / factor(n).
    """
    sizes = sorted(set(world_sizes))
    base = sizes[0]
    return {
        "rule": (
            "ring all-reduce: each rank sends and receives 2(n-1)/n x S bytes; with the same "
            "per-rank link bandwidth, busbw stays constant and algbw scales as n/(2(n-1))"
        ),
        "multipliers": {str(n): bus_factor(n) for n in sizes},
        "baseline_world_size": base,
        "predicted_algbw_ratio": {str(n): bus_factor(base) / bus_factor(n) for n in sizes if n != base},
        "predicted_busbw_ratio": {str(n): 1.0 for n in sizes if n != base},
    }


def ring_comparison(prediction: dict[str, Any], runs: list[dict[str, Any]], curve: str = "normal") -> dict[str, Any]:
    """Measured algbw/busbw ratios at the largest size every world size measured, vs predicted."""
    base = prediction["baseline_world_size"]
    by_ws = {r["world_size"]: r for r in runs if r["curve"] == curve and r.get("points")}
    if base not in by_ws:
        return {"compared": False, "reason": f"no {curve} points at the baseline world size {base}"}
    out: dict[str, Any] = {"compared": True, "curve": curve, "baseline_world_size": base, "by_world_size": {}}
    for key, predicted in sorted(prediction["predicted_algbw_ratio"].items()):
        n = int(key)
        if n not in by_ws:
            out["by_world_size"][key] = {"compared": False, "reason": f"no {curve} points at world size {n}"}
            continue
        common = {p["bytes"] for p in by_ws[base]["points"]} & {p["bytes"] for p in by_ws[n]["points"]}
        if not common:
            out["by_world_size"][key] = {"compared": False, "reason": "no size measured at both world sizes"}
            continue
        size = max(common)
        base_fig = _figures_at(by_ws[base], size)
        fig = _figures_at(by_ws[n], size)
        measured = fig["algbw_gbps"] / base_fig["algbw_gbps"]
        out["by_world_size"][key] = {
            "compared": True,
            "at_bytes": size,
            "predicted_algbw_ratio": predicted,
            "measured_algbw_ratio": measured,
            "relative_deviation": measured / predicted - 1.0,
            "measured_busbw_ratio": fig["busbw_gbps"] / base_fig["busbw_gbps"],
        }
    return out


def _figures_at(run: dict[str, Any], nbytes: int) -> dict[str, float]:
    point = next(p for p in run["points"] if p["bytes"] == nbytes)
    return point_figures(point, run["world_size"])


# --- normal versus control ---------------------------------------------------------------


def p2p_gap(normal: dict[str, Any], control: dict[str, Any]) -> dict[str, Any]:
    """busbw ratio normal/control at the largest common size, and both knees."""
    common = {p["bytes"] for p in normal.get("points", [])} & {p["bytes"] for p in control.get("points", [])}
    if not common:
        return {"compared": False, "reason": "the two curves share no measured size"}
    size = max(common)
    a, b = _figures_at(normal, size), _figures_at(control, size)
    fa, fb = curve_figures(normal), curve_figures(control)
    return {
        "compared": True,
        "world_size": normal["world_size"],
        "at_bytes": size,
        "normal_busbw_gbps": a["busbw_gbps"],
        "p2p_disabled_busbw_gbps": b["busbw_gbps"],
        "busbw_ratio": a["busbw_gbps"] / b["busbw_gbps"],
        "normal_knee_bytes": fa["knee_bytes"],
        "p2p_disabled_knee_bytes": fb["knee_bytes"],
    }


# --- headlines and discrepancies ---------------------------------------------------------


def primary_world_size(document: dict[str, Any]) -> int | None:
    """The largest world size with measured points (else the largest requested, else None)."""
    measured = [r["world_size"] for r in document.get("runs", []) if r.get("points")]
    if measured:
        return max(measured)
    requested = document.get("world_sizes") or []
    return max(requested) if requested else None


def _headline_curve(figures: dict[str, Any]) -> dict[str, Any]:
    return {
        key: figures[key] for key in ("knee_bytes", "alpha_us", "beta_gbps", "half_plateau_bytes", "busbw_at_max_gbps")
    }


def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the runs' per-call times (per-rank medians in contract 1)."""
    runs = document.get("runs", [])
    primary = primary_world_size(document)
    by_ws: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.get("points"):
            by_ws.setdefault(str(run["world_size"]), {})[run["curve"]] = _headline_curve(curve_figures(run))
    out: dict[str, Any] = {
        "backend": document.get("backend"),
        "world_size": primary,
        "curves": by_ws.get(str(primary), {}) if primary is not None else {},
        "curves_by_world_size": by_ws,
        "limitations": [item["what"] for item in document.get("limitations", [])],
        "failures": [f"{r['curve']} n={r['world_size']}: {r['failure']['message']}" for r in runs if r.get("failure")],
        "nvls_enabled": document.get("nvls", {}).get("NCCL_NVLS_ENABLE") != "0",
        "medians_from": medians_source(document),
    }
    prediction = document.get("prediction")
    out["ring_comparison"] = ring_comparison(prediction, runs) if isinstance(prediction, dict) else None
    gaps = {}
    for ws, curves in by_ws.items():
        if set(CURVES) <= set(curves):
            normal, control = (_run(runs, int(ws), c) for c in CURVES)
            gaps[ws] = p2p_gap(normal, control)
    out["p2p_gap"] = gaps
    return out


def _run(runs: list[dict[str, Any]], world_size: int, curve: str) -> dict[str, Any]:
    return next(r for r in runs if r["world_size"] == world_size and r["curve"] == curve)
