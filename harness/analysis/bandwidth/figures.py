"""Bandwidth sweep analysis: byte counting, point classification, plateau, repeat spread, diagnosis.

Standard library only: the probe uses it inside plain CUDA images and `dossier verify` uses it
to recompute the headline figures from the raw per-iteration times a document carries.

Byte counting follows BabelStream (src/benchmark.h: `bytes = weight * sizeof(T) * N`): each
kernel declares how many buffers it reads and writes per iteration, and
bytes per iteration = (reads + writes) x buffer bytes. 1 GB/s = 10^9 bytes per second.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from harness import catalogue
from harness.analysis.bandwidth.diagnosis import diagnose as diagnose  # the repeats' diagnosis, re-exported
from harness.analysis.memo import per_document
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict

# The byte-counting rule as data. `torch_op` documents how the probe implements each kernel.
KERNELS: dict[str, dict[str, Any]] = {
    "copy": {"reads": 1, "writes": 1, "torch_op": "c.copy_(a)"},
    "read": {"reads": 1, "writes": 0, "torch_op": "torch.sum(a, out=s)"},
    "triad": {"reads": 2, "writes": 1, "torch_op": "torch.add(b, c, alpha=scalar, out=a)"},
    "write": {"reads": 0, "writes": 1, "torch_op": "a.fill_(scalar)"},
}
BYTE_RULE = (
    "bytes per iteration = (buffers read + buffers written) x buffer bytes "
    "(BabelStream convention: algorithmic traffic, not cache lines the hardware may add)"
)

PLATEAU_TOLERANCE = 0.03  # (max - min) / median of the plateau points
PLATEAU_MIN_POINTS = 2
LAUNCH_BOUND_FACTOR = 3.0  # per-iteration time <= 3 x the measured empty-launch time

PLATEAU_RULE = (
    f"the longest run of the largest sizes, none cache-resident nor launch-bound, whose "
    f"GB/s lie within the tolerance ((max - min) / median); at least {PLATEAU_MIN_POINTS} "
    f"sizes; its value is their median, never the maximum"
)
LAUNCH_RULE = (
    f"launch-bound when the median per-iteration time is at most {LAUNCH_BOUND_FACTOR:g} x "
    f"the median time of an empty launch (a one-element in-place add) measured the same way"
)
CACHE_RULE = "cache-resident when the bytes one iteration touches fit in the cache (<= its size)"


# --- the bandwidth criteria: each rule written once, with its source ----------------------------
# Lab M1 (Profile Your Own Rig), success criterion 2: "Three large-buffer bandwidth medians vary
# by less than 5% and the median is within 15% of a known-good result from the same GPU SKU and
# form factor." The report judges the lab's criterion as the lab states it; acceptance judges a
# buyer's floor (a card faster than the known-good unit is no failure for a buyer).
# Both figures are the catalogue's rules (harness/data/gpus.json `rules`), written there once with their source.
REPEAT_SPREAD_MAX = catalogue.rule("repeat_spread_max")
REPEAT_SPREAD_SOURCE = catalogue.rule_source("repeat_spread_max")
REPEAT_SPREAD_SCOPE = (
    "within one run"  # what repeat_spread covers: one process, seconds apart; not run to run (issue 30)
)
KNOWN_GOOD_TOLERANCE = catalogue.rule("known_good_tolerance")
KNOWN_GOOD_SOURCE = catalogue.rule_source("known_good_tolerance")
KNOWN_GOOD_FLOOR_SOURCE = (
    "acceptance: at least the profile's share of the known-good result; a faster card is no failure for a buyer"
)


# The lab's "if variance exceeds 5%, diagnose before continuing" (issue 35): repeats that disagree are
# measured once more, each AGAIN_FACTOR times longer (harness/probes/bandwidth/repeats.py); that round is
# judged, the first kept beside it (repeats.first_round) with why (repeats.again). From probe contract 6.
AGAIN_FACTOR = 4.0
AGAIN_RULE = (
    f"when the repeats vary by the spread limit or more, the same repeats are measured once more, each "
    f"{AGAIN_FACTOR:g} x longer (all of them within the again budget); that round is the one judged"
)
AGAIN_FROM = 6  # the probe contract from which a bandwidth document measures disagreeing repeats again


def repeats_agree(spread_fraction: float, limit: float = REPEAT_SPREAD_MAX) -> bool:
    """The repeat medians "vary by less than" LIMIT: (max - min) / median strictly under it."""
    return spread_fraction < limit


def repeat_verdict(spread_fraction: float, limit: float = REPEAT_SPREAD_MAX) -> Verdict:
    """PASS when the repeats agree (`repeats_agree`), else FAIL."""
    return Verdict.PASS if repeats_agree(spread_fraction, limit) else Verdict.FAIL


def within_known_good(ratio: float, tolerance: float = KNOWN_GOOD_TOLERANCE) -> bool:
    """The lab's two-sided rule: measured / known-good within 1 +- TOLERANCE (15% slower or faster)."""
    return 1 - tolerance <= ratio <= 1 + tolerance


def meets_known_good_floor(measured_gbps: float, known_good_gbps: float, share: float) -> bool:
    """Acceptance's one-sided rule: at least SHARE x the known-good figure; faster always passes."""
    return measured_gbps >= share * known_good_gbps


def bytes_per_iteration(kernel: str, buffer_bytes: int) -> int:
    """(reads + writes) x buffer bytes, from the KERNELS table."""
    spec = KERNELS[kernel]
    return (spec["reads"] + spec["writes"]) * buffer_bytes


def gbps(nbytes: float, seconds: float) -> float:
    """Decimal gigabytes per second."""
    return nbytes / seconds / 1e9


def spread(values: Sequence[float]) -> float:
    """(max - min) / median."""
    return (max(values) - min(values)) / statistics.median(values)


def classify(
    per_iteration_s: float, bytes_touched: int, cache_bytes: float | None, empty_launch_s: float | None
) -> tuple[list[str], list[str]]:
    """Marks ("cache_resident", "launch_bound") for one point and a reason for each."""
    marks, why = [], []
    if cache_bytes is not None and bytes_touched <= cache_bytes:
        marks.append("cache_resident")
        why.append(f"{bytes_touched / 2**20:g} MiB touched per iteration fits in the {cache_bytes / 2**20:g} MiB cache")
    if empty_launch_s is not None and per_iteration_s <= LAUNCH_BOUND_FACTOR * empty_launch_s:
        marks.append("launch_bound")
        why.append(
            f"{per_iteration_s * 1e6:.1f} us per iteration is within {LAUNCH_BOUND_FACTOR:g} x "
            f"the {empty_launch_s * 1e6:.1f} us empty launch"
        )
    return marks, why


def plateau(points: Sequence[dict[str, Any]], tolerance: float = PLATEAU_TOLERANCE) -> dict[str, Any]:
    """The plateau of a sweep: points are {size_mib, gbps, marks}, any order.

    Returns {reached, sizes_mib, gbps, why}. Not reached (gbps None) when fewer than
    PLATEAU_MIN_POINTS of the largest sizes are eligible and flat.
    """
    ordered = sorted(points, key=lambda p: p["size_mib"])
    eligible: list[dict[str, Any]] = []
    for point in reversed(ordered):
        if point["marks"]:
            break  # a cache-resident or launch-bound point ends the run from the top
        candidate = [point, *eligible]
        if len(candidate) > 1 and spread([p["gbps"] for p in candidate]) > tolerance:
            break
        eligible = candidate
    if len(eligible) < PLATEAU_MIN_POINTS:
        return {
            "reached": False,
            "sizes_mib": [p["size_mib"] for p in eligible],
            "gbps": None,
            "why": _no_plateau_reason(ordered, eligible, tolerance),
        }
    value = statistics.median(p["gbps"] for p in eligible)
    return {
        "reached": True,
        "sizes_mib": [p["size_mib"] for p in eligible],
        "gbps": value,
        "why": f"{len(eligible)} largest sizes agree within {tolerance:.0%}",
    }


def _no_plateau_reason(ordered: Sequence[dict[str, Any]], eligible: list[dict[str, Any]], tolerance: float) -> str:
    if not ordered:
        return "no sizes were measured"
    top = ordered[-1]
    if top["marks"]:
        return (
            f"the largest size ({top['size_mib']:g} MiB) is {' and '.join(top['marks'])}: "
            f"no size reached device memory, so no HBM plateau can be named"
        )
    if len(ordered) == 1 or len(eligible) == len([p for p in ordered if not p["marks"]]):
        return f"only {len(eligible)} size(s) beyond the cache and launch limits; a plateau needs {PLATEAU_MIN_POINTS}"
    return (
        f"the largest sizes still differ by more than {tolerance:.0%}: "
        f"the curve is still rising at {top['size_mib']:g} MiB"
    )


def explain_off_plateau(
    points: Sequence[dict[str, Any]], plateau_gbps: float | None, plateau_sizes: Sequence[float]
) -> list[dict[str, Any]]:
    """Why each size outside the plateau differs from it."""
    explained = []
    for point in sorted(points, key=lambda p: p["size_mib"]):
        if point["size_mib"] in plateau_sizes:
            continue
        reasons = list(point.get("why") or [])
        if not point["marks"]:
            reasons.append(
                "beyond the cache and not launch-bound, but still on the ramp: fixed "
                "per-launch costs and the kernel's tail are a larger share of a shorter run"
            )
        delta = None if plateau_gbps is None else round((point["gbps"] - plateau_gbps) / plateau_gbps, 4)
        explained.append(
            {"size_mib": point["size_mib"], "gbps": point["gbps"], "vs_plateau": delta, "why": "; ".join(reasons)}
        )
    return explained


# --- recomputation from raw data ---------------------------------------------------------------

ELEMENT_BYTES = {"float32": 4}  # the probe's buffers: (element type -> bytes)


def point_bytes(document: dict[str, Any], point: dict[str, Any]) -> int:
    """A point's bytes per iteration from the kernel's byte rule and its buffer, elements x element
    bytes: never the stated bytes_per_iteration. Without a known element type or an element count
    there are no bytes to count: ValueError, naming which (the schema lets both be absent; the
    probe writes both for every measured point)."""
    element, elements = ELEMENT_BYTES.get(str(document.get("dtype"))), point.get("elements")
    if element is None:
        raise ValueError(
            f"the bandwidth document's element type {document.get('dtype', '(absent)')!r} has no known width"
        )
    if not isinstance(elements, int) or isinstance(elements, bool):
        raise ValueError(f"the {point.get('size_mib')} MiB sweep point states no element count ({elements!r})")
    return bytes_per_iteration(document["kernel"], elements * element)


def point_gbps(document: dict[str, Any], point: dict[str, Any]) -> float:
    """A point's GB/s from its raw per-iteration times and its recounted bytes."""
    return gbps(point_bytes(document, point), statistics.median(point["iteration_times_s"]))


def recomputed_points(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep's points {size_mib, gbps, marks, why} recomputed from times, sizes and the rules."""
    cache = document["cache"].get("size_bytes")
    empty = document["launch"].get("empty_launch_s")
    cache = cache if isinstance(cache, (int, float)) else None
    empty = empty if isinstance(empty, (int, float)) else None
    points = []
    for p in document["sweep"]:
        median_s = statistics.median(p["iteration_times_s"])
        marks, why = classify(median_s, point_bytes(document, p), cache, empty)
        points.append({"size_mib": p["size_mib"], "gbps": point_gbps(document, p), "marks": marks, "why": why})
    return points


FIXED_COST_RULE = (
    "a kernel's time is a fixed cost plus bytes / rate: the line through the sweep's two smallest "
    "points that are not cache-resident (the kernel's own median times), so a kernel moving few "
    "bytes attains bytes / (fixed cost + bytes / rate), below the plateau"
)
# From probe contract 5 the line goes through each point's fastest iteration: what a kernel attains at
# best, as BabelStream reports its rates from the fastest run. On the lent H200 (bench/gpu_final.sh,
# 2026-12-01, tests/fixtures/h200/final) the medians gave a fixed cost of 4.0-4.3 us in three runs and
# 6.0 us in a fourth, whose 128 MiB copy's median was 37.2 us against 35.4 us; the fastest iterations
# give 3.0-3.5 us in all four.
FASTEST_FROM = 5
FIXED_COST_RULE_FASTEST = FIXED_COST_RULE.replace("the kernel's own median times", "the kernel's fastest iterations")


def kernel_fixed_cost(document: dict[str, Any]) -> dict[str, Any] | None:
    """The fixed cost per kernel and the streaming rate the sweep measured (FIXED_COST_RULE), from
    raw times and recounted bytes; None when the sweep has no two such points or the line through
    them has no positive cost and rate (then nothing is claimed)."""
    cache = (document.get("cache") or {}).get("size_bytes")
    cache = cache if isinstance(cache, (int, float)) else None
    fastest = document.get("contract_version", 1) >= FASTEST_FROM
    found = sorted(
        (point_bytes(document, p), statistics.median(p["iteration_times_s"]), min(p["iteration_times_s"]))
        for p in document.get("sweep") or []
        if p.get("iteration_times_s")
    )
    streaming = [
        (b, best if fastest else median)
        for b, median, best in found
        if "cache_resident" not in classify(median, b, cache, None)[0]
    ]
    if len(streaming) < 2:
        return None
    (b1, t1), (b2, t2) = streaming[:2]
    if t2 <= t1:
        return None
    rate = (b2 - b1) / (t2 - t1)
    fixed = t1 - b1 / rate
    if fixed <= 0:
        return None
    return {
        "kernel": document["kernel"],
        "fixed_s": fixed,
        "rate_gbps": rate / 1e9,
        "through_bytes": [b1, b2],
        "through_s": [t1, t2],
        "statistic": "fastest" if fastest else "median",
        "rule": FIXED_COST_RULE_FASTEST if fastest else FIXED_COST_RULE,
    }


def attainable_at(cost: dict[str, Any], nbytes: float) -> float:
    """GB/s a kernel moving NBYTES attains by the fixed-cost line of `kernel_fixed_cost`."""
    return nbytes / (cost["fixed_s"] + nbytes / (cost["rate_gbps"] * 1e9)) / 1e9


def first_round(document: dict[str, Any]) -> dict[str, Any]:
    """The repeats measured first, when they disagreed and were measured again (repeats.first_round): their
    medians and spread recomputed from their times, and each round's seconds per repeat (None: not again)."""
    repeats = document["repeats"]
    first = repeats.get("first_round")
    medians = [point_gbps(document, run) for run in first["runs"]] if isinstance(first, dict) else None
    return {
        "repeat_budget_s": number_or_none(repeats.get("repeat_budget_s"))
        or number_or_none((document.get("timing") or {}).get("repeat_budget_s")),
        "repeat_first_medians_gbps": medians,
        "repeat_first_spread": spread(medians) if medians else None,
        "repeat_first_budget_s": number_or_none(first.get("repeat_budget_s")) if isinstance(first, dict) else None,
    }


@per_document
def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the sweep's and repeats' per-iteration times."""
    tolerance = document["plateau"]["tolerance"]
    found = plateau(recomputed_points(document), tolerance)
    repeats = document["repeats"]
    medians = [point_gbps(document, run) for run in repeats["runs"]]
    repeat_spread = spread(medians) if medians else None
    reference = document["reference"]
    known_good = number_or_none(reference.get("known_good_gbps"))
    ratio = (found["gbps"] / known_good) if (known_good and found["gbps"] is not None) else None
    return {
        "device": document["device"],
        "kernel": document["kernel"],
        "plateau_gbps": found["gbps"],
        "plateau_sizes_mib": found["sizes_mib"] if found["reached"] else [],
        "plateau_tolerance": tolerance,
        "repeat_size_mib": max((r["size_mib"] for r in repeats["runs"]), default=None),
        "repeat_medians_gbps": medians,
        "repeat_median_gbps": statistics.median(medians) if medians else None,
        "repeat_spread": repeat_spread,
        "repeat_verdict": (None if repeat_spread is None else repeat_verdict(repeat_spread, repeats["spread_max"])),
        **first_round(document),
        "sku_id": reference.get("sku_id"),
        "spec_gbps": number_or_none(reference.get("spec_gbps")),
        "known_good_gbps": known_good,
        "known_good_ratio": ratio,
    }


def differs(stated: Any, computed: Any, rel: float = 1e-6) -> bool:
    """A stated figure against its recomputation: counts exactly, other numbers within REL, lists
    element by element."""
    if isinstance(stated, int) and isinstance(computed, int):  # counts, byte totals, flags
        return stated != computed
    if isinstance(stated, (int, float)) and isinstance(computed, (int, float)):
        return abs(stated - computed) > rel * max(abs(stated), abs(computed), 1e-12)
    if isinstance(stated, list) and isinstance(computed, list):
        return len(stated) != len(computed) or any(differs(a, b, rel) for a, b in zip(stated, computed, strict=True))
    if isinstance(stated, dict) and isinstance(computed, dict):
        return stated.keys() != computed.keys() or any(differs(stated[k], computed[k], rel) for k in stated)
    return stated != computed
