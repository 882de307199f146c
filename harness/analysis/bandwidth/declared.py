"""The bandwidth probe's figures, declared once (harness.analysis.figure): the plateau decides; the median
of the repeats, which later steps are fed, informs and is what the fleet compares."""

from __future__ import annotations

from typing import Any

from harness.analysis.figure import DECIDES, INFORMS, Accept, Figure, Fleet, KnownGood

HBM_KNOWN_GOOD = KnownGood("hbm_bandwidth_gbps", "hbm_bandwidth", "kernel", "GB/s", "{} memory bandwidth")


def _kernel(heads: dict[str, Any]) -> dict[str, Any]:
    return {"kernel": heads.get("kernel")}


FIGURES = (
    Figure(
        "bandwidth plateau",
        "GB/s",
        lambda heads: heads.get("plateau_gbps"),
        role=DECIDES,
        figure="bandwidth.plateau_gbps",
        spread=lambda heads: heads.get("repeat_spread"),
        kind="steady",
        conditions=_kernel,
        accept=Accept(HBM_KNOWN_GOOD, "bandwidth_plateau", "bandwidth_plateau_min_share", lambda h: h.get("kernel")),
    ),
    Figure(
        "bandwidth sustained median",
        "GB/s",
        lambda heads: heads.get("repeat_median_gbps"),
        role=INFORMS,
        why="the median of the three repeats at the largest size: the plateau's own sizes, measured again; "
        "the plateau decides",
        figure="bandwidth.repeat_median_gbps",
        spread=lambda heads: heads.get("repeat_spread"),
        kind="steady",
        conditions=_kernel,
        fleet=Fleet("bandwidth_sustained_gbps", "sustained memory bandwidth (median of the three repeat medians)"),
    ),
)
