"""The figures a baseline is made of: for every rate criterion, the value it judges, per bundle.

Each figure is read from the same recomputed headline the criterion reads (the bandwidth plateau
of the kernel measured, the roofline's burst best per dtype, the stress run's lowest steady rate,
the slowest GPU's pinned host copies, the slowest NVLink peer read, the all-reduce bus bandwidth
at the largest message), so the profile's known-good figure is the median of exactly what
acceptance will hold a candidate to (tests/commands/test_baseline.py checks that the two agree). A
figure also names where it goes in the profile: its known-good entry and the share threshold that
makes its fail line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.units import number_or_none
from harness.judge.acceptance.rates import ALLREDUCE_KNOWN_GOOD, GEMM_KNOWN_GOOD, HBM_KNOWN_GOOD
from harness.judge.acceptance.stress import SUSTAINED_GEMM
from harness.judge.acceptance.transfer import HOST_RATES, TRANSFER, _nvlink_pairs
from harness.judge.facts import BundleFacts


@dataclass(frozen=True, order=True)
class Figure:
    """One judged figure: the criterion, its known-good slot (field, key), its share slot (threshold
    key, the part of a per-part share or None), its figure id and kind in the noise model
    (harness.analysis.repeatability: the run-to-run tolerance that floors its threshold) and unit."""

    criterion: str
    known_good: tuple[str, str]
    share: tuple[str, str | None]
    figure: str
    kind: str
    unit: str


def _bandwidth(facts: BundleFacts) -> dict[Figure, float]:
    b = facts.figures("bandwidth")
    plateau = number_or_none((b.values or {}).get("plateau_gbps"))
    if b.values is None or plateau is None:
        return {}
    kernel = b.values["kernel"]
    return {
        Figure(
            "bandwidth_plateau",
            (HBM_KNOWN_GOOD.field, kernel),
            ("bandwidth_plateau_min_share", None),
            "bandwidth.plateau_gbps",
            "steady",
            "GB/s",
        ): plateau
    }


def _gemm(facts: BundleFacts) -> dict[Figure, float]:
    found = {}
    for figures in facts.figures_by_analysis("roofline"):
        dtype, best = (
            (figures.values or {}).get("dtype"),
            number_or_none((figures.values or {}).get("burst_best_tflops")),
        )
        if figures.present and isinstance(dtype, str) and best is not None:
            found[
                Figure(
                    f"gemm_{dtype}",
                    (GEMM_KNOWN_GOOD.field, dtype),
                    ("gemm_min_share", dtype),
                    f"roofline.{dtype}.burst_best_tflops",
                    "burst",
                    "TFLOPS",
                )
            ] = best
    return found


def _stress(facts: BundleFacts) -> dict[Figure, float]:
    s = facts.figures("stress")
    lowest = number_or_none((s.values or {}).get("min_steady_tflops"))
    if s.values is None or lowest is None:
        return {}
    dtype = s.values["dtype"]
    return {
        Figure(
            f"stress_sustained_{dtype}",
            (SUSTAINED_GEMM.field, dtype),
            ("stress_sustained_min_share", None),
            "stress.steady_tflops",
            "steady",
            "TFLOPS",
        ): lowest
    }


def _transfer(facts: BundleFacts) -> dict[Figure, float]:
    t = facts.figures("transfer")
    if t.values is None or t.values.get("device") != "cuda":
        return {}
    heads = t.values
    per_gpu = {gpu: f for gpu, f in (heads.get("per_gpu") or {}).items() if gpu != "host"}
    found = {}
    for name, (key, direction, _, _) in HOST_RATES.items():
        rates = [number_or_none(f.get(key)) for f in per_gpu.values() if key in f]
        measured = [r for r in rates if r is not None]
        if rates and len(measured) == len(rates):
            found[
                Figure(
                    name,
                    (TRANSFER.field, direction),
                    ("transfer_min_share", direction),
                    f"transfer.{key}",
                    "steady",
                    "GB/s",
                )
            ] = min(measured)
    cells = (heads.get("peer") or {}).get("read") or {}
    reads = [
        number_or_none((cells.get(key) or {}).get("plateau_gbps"))
        for a, b in _nvlink_pairs(heads)
        for key in (f"{a}->{b}", f"{b}->{a}")
    ]
    measured = [r for r in reads if r is not None]
    if reads and len(measured) == len(reads):
        found[
            Figure(
                "transfer_peer_read",
                (TRANSFER.field, "peer_read"),
                ("transfer_min_share", "peer_read"),
                "transfer.peer.read_gbps",
                "steady",
                "GB/s",
            )
        ] = min(measured)
    return found


def _allreduce(facts: BundleFacts) -> dict[Figure, float]:
    a = facts.figures("allreduce")
    if a.values is None or a.values.get("backend") != "nccl":
        return {}
    busbw = number_or_none(((a.values.get("curves") or {}).get("normal") or {}).get("busbw_at_max_gbps"))
    world = a.values.get("world_size")
    if busbw is None or not isinstance(world, int):
        return {}
    return {
        Figure(
            "allreduce_busbw",
            (ALLREDUCE_KNOWN_GOOD.field, str(world)),
            ("allreduce_busbw_min_share", None),
            "allreduce.normal.busbw_at_max_gbps",
            "steady",
            "GB/s",
        ): busbw
    }


READERS = (_bandwidth, _gemm, _stress, _transfer, _allreduce)


def figures_of(facts: BundleFacts) -> dict[Figure, float]:
    """Every rate figure this bundle measured, keyed by what it is."""
    found: dict[Figure, Any] = {}
    for read in READERS:
        found.update(read(facts))
    return found
