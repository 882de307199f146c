"""The roofline's figures, declared once (harness.analysis.figure): each dtype's GEMM burst (the best of the
fixed burst-best shapes, timed in windows at full clock) decides; every shape's rate, the ridges and the
fusion speedup inform."""

from __future__ import annotations

from typing import Any

from harness.analysis import timing
from harness.analysis.figure import DECIDES, INFORMS, Accept, Figure, Fleet, KnownGood
from harness.analysis.roofline import figures as rf

GEMM_KNOWN_GOOD = KnownGood("gemm_tflops", "gemm", "dtype", "TFLOPS", "{} GEMM")
STEADY_CALL_S = 1e-3  # a GEMM of 1 ms or more a call is a steady-state figure (issue 30's kinds)
SHAPE_WHY = (
    "one GEMM shape of the sweep: what it shows is explained by the roofline model; the burst best of each "
    "dtype decides (a shape's rate moves with its tiling, its waves and, at 1 ms or more a call, the power cap)"
)


def roofline_kind(per_call_s: float, launch_bound: bool) -> str:
    """A roofline rate's figure kind: launch-bound (an eager rate whose call is launch-bound: the host's
    launch rate), steady (1 ms or more a call), else a burst."""
    if launch_bound:
        return "launch_bound"
    return "steady" if per_call_s >= STEADY_CALL_S else "burst"


def _headline_s(document: dict[str, Any], label: str) -> float | None:
    shape = next((s for s in document.get("measurements", {}).get("shapes", []) if s.get("label") == label), None)
    return rf.headline_of(document, shape)[0] if shape else None


def _rate(value: Any, kind: str, spread: Any, conditions: Any, noise: str, dtype: str, best: bool) -> dict[str, Any]:
    return {
        "value": value,
        "kind": kind,
        "spread": spread,
        "conditions": conditions,
        "noise": noise,
        "dtype": dtype,
        "role": DECIDES if best else INFORMS,
        "noise_class": "host" if kind == "launch_bound" else "device",
    }


def _shape_rates(dtype: str, noise: str, row: dict[str, Any], view: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    figure = f"{dtype}.{row['label']}"
    kernel_only = row.get("rate_basis") == timing.KERNEL_ONLY
    seconds = _headline_s(view, row["label"])
    kind = roofline_kind(seconds, bool(row.get("launch_bound")) and not kernel_only) if seconds else "burst"
    basis = {"basis": row.get("rate_basis") or "per-call timing (before timed windows)"}
    found = [
        (
            f"{figure}.tflops",
            _rate(row["burst_tflops"], kind, row.get("window_spread"), basis, f"{noise}.{figure}.tflops", dtype, False),
        )
    ]
    if kernel_only and row.get("eager_tflops") is not None:
        found.append(
            (
                f"{figure}.eager_tflops",
                _rate(
                    row["eager_tflops"],
                    "launch_bound",
                    row.get("eager_spread"),
                    basis,
                    f"{noise}.{figure}.eager_tflops",
                    dtype,
                    False,
                ),
            )
        )
    elif row.get("kernel_tflops") is not None:
        found.append(
            (
                f"{figure}.kernel_tflops",
                _rate(row["kernel_tflops"], "burst", None, basis, f"{noise}.{figure}.kernel_tflops", dtype, False),
            )
        )
    return found


def roofline_rates(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(DTYPE.FIGURE, item) for every GEMM rate of one roofline document, its own dtype's and each dtype
    check's: the burst best and each measured shape's rates (beside a kernel-only headline, probe contract
    4 on, the eager rate, the host's launch rate: `.eager_tflops`, launch-bound; beside an eager one,
    documents before, the kernel-only rate: `.kernel_tflops`), each item its value, kind, within-run spread
    (across the shape's timed windows), the conditions a rate is comparable under (what the burst best is
    taken over; what a shape's rate is timed from), the id the noise model knows it by, its dtype and role."""
    found = []
    for dtype, view in rf.dtype_documents(document).items():
        heads = rf.headlines(view)
        # The run-to-run measurements are of the windowed probe (contract 3 on): a rate timed call by call
        # before it is looked up under an id of its own, which nothing measures (its kind's stated default).
        noise = "roofline" if rf.windowed(view) else "roofline.per-call"
        over = {"over": heads.get("burst_best_over")}
        best = _rate(heads["burst_best_tflops"], "burst", None, over, f"{noise}.{dtype}.burst_best_tflops", dtype, True)
        found.append((f"{dtype}.burst_best_tflops", best))
        for row in rf.burst_windows(view):
            found += _shape_rates(dtype, noise, row, view)
    return found


def _main_burst(document: dict[str, Any]) -> Any:
    return rf.headlines(document).get("burst_best_tflops")


# Every GEMM rate of every dtype (each shape's too), each dtype's ridge, the fusion speedup. Bundles before
# format 5 timed each dtype in a step of its own (roofline-fp8, ...): every step the roofline analysis reads.
FIGURES = (
    Figure(
        "roofline {}",
        "TFLOPS",
        lambda item: item["value"],
        role=lambda item: item["role"],
        noise_class=lambda item: item["noise_class"],
        why=SHAPE_WHY,
        spread=lambda item: item["spread"],
        each=roofline_rates,
        figure="roofline.{}",
        kind=lambda item: item["kind"],
        noise=lambda item: item["noise"],
        conditions=lambda item: item["conditions"],
        source="document",
        every_step=True,
        fleet=Fleet(
            "gemm_best_tflops",
            "burst: the best GEMM rate over the roofline's fixed burst-best shapes, each timed in short windows "
            "at full clock (the sustained rate is stress_steady_tflops)",
            read=_main_burst,
        ),
        accept=Accept(
            GEMM_KNOWN_GOOD,
            "gemm_{}",
            "gemm_min_share",
            lambda item: item["dtype"] if item["role"] == DECIDES else None,
            share_per_key=True,
        ),
    ),
    Figure(
        "roofline {} ridge",
        "FLOP/byte",
        lambda heads: heads.get("ridge_flop_per_byte"),
        why="derived: the dtype's peak over the bandwidth step's median, which is judged itself",
        each=lambda document: list(rf.dtype_headlines(document).items()),
        figure="roofline.{}.ridge_flop_per_byte",
        kind="steady",
        source="document",
        every_step=True,
    ),
    Figure(
        "roofline fusion speedup",
        "x",
        lambda heads: heads.get("fusion_speedup"),
        why="a ratio of two short kernels' times, the lab's stretch goal: how much HBM traffic fusion removes",
        figure="roofline.fusion_speedup",
        kind="burst",
    ),
)
