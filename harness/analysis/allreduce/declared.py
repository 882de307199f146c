"""The all-reduce's figures, declared once (harness.analysis.figure): the bus bandwidth at the largest message
decides; the fitted bandwidth, the startup time and the knee inform."""

from __future__ import annotations

from typing import Any

from harness.analysis.figure import DECIDES, Accept, Figure, KnownGood

ALLREDUCE_KNOWN_GOOD = KnownGood(
    "allreduce_busbw_gbps", "allreduce_busbw", "world_size", "GB/s", "all-reduce bus bandwidth, {} GPUs", int
)


def _curves(heads: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(backend, world size and curve, its figures) for each curve the headlines name (normal, p2p_disabled)."""
    by_world = heads.get("curves_by_world_size")
    by_world = by_world if isinstance(by_world, dict) else {}
    return [
        (
            f"{heads.get('backend')}.n{world}.{curve}",
            {**values, "backend": heads.get("backend"), "world": world, "curve": curve},
        )
        for world, curves in sorted(by_world.items(), key=lambda kv: str(kv[0]))
        if isinstance(curves, dict)
        for curve, values in sorted(curves.items())
        if isinstance(values, dict)
    ]


def _nccl_world(item: dict[str, Any]) -> str | None:
    """The known-good key of a curve acceptance holds: the normal NCCL curve's world size."""
    return str(item["world"]) if item["backend"] == "nccl" and item["curve"] == "normal" else None


_WHY = {
    "beta_gbps": "the alpha-beta fit's slope: the bus bandwidth at the largest message decides",
    "alpha_us": "the startup regime, set by the host's launch path and the library's protocol choice",
    "knee_bytes": "where the startup regime ends: a size on a power-of-two grid, read from the fit",
}

# Bus bandwidth at the largest size and the fitted bandwidth are rates; the startup time and the knee are of
# the startup regime (launch-bound).
FIGURES = tuple(
    Figure(
        f"allreduce {{}} {key}",
        unit,
        (lambda k: lambda curve: curve.get(k))(key),
        role=DECIDES if key == "busbw_at_max_gbps" else "informs",
        noise_class="host" if kind == "launch_bound" else "link",
        why=_WHY.get(key, ""),
        each=_curves,
        figure=f"allreduce.{{}}.{key}",
        kind=kind,
        noise=(lambda k: lambda curve: f"allreduce.{k}")(key),
        accept=(
            Accept(ALLREDUCE_KNOWN_GOOD, "allreduce_busbw", "allreduce_busbw_min_share", _nccl_world)
            if key == "busbw_at_max_gbps"
            else None
        ),
    )
    for key, unit, kind in (
        ("busbw_at_max_gbps", "GB/s", "steady"),
        ("beta_gbps", "GB/s", "steady"),
        ("alpha_us", "us", "launch_bound"),
        ("knee_bytes", "bytes", "launch_bound"),
    )
)
