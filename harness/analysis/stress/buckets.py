"""The stress document's GEMM buckets against the probe's loop (issue 28): they chain (index, first
iteration, iteration counts, bit-check slots), each closes where bucket_s and seconds put its boundary,
the bucket capacity follows from the fastest warm-up GEMM, and the GEMM phase ran its seconds when it
says it completed."""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness.analysis.stress.recorded import ROUNDING_S, is_a

CAPACITY_MARGIN = 2.0  # a bucket holds up to 2x the iterations the warm-up rate predicts...
GEMM_MS_DECIMALS = 4  # the probe records GEMM times to 0.1 us (below what CUDA events resolve, about 0.5 us)
CAPACITY_EXTRA = 16  # ...plus a few; a bucket that fills closes early (closed_by "capacity")
# A bucket closes at the first GEMM issued after its boundary: on the lent H200 (bf16 and tf32,
# 45-60 s runs, 2026-11-30/12-01) 0.1-6.4 ms after it, on the 2-core CPU run 22-32 ms. The median
# lag is held to a tenth of a bucket: a bucket_s stated 20% off its run's moves it by that much.
MEDIAN_LAG_MAX_SHARE = 0.1


def bucket_capacity(fastest_gemm_ms: float, bucket_s: float) -> int:
    """The most GEMMs a bucket holds: twice what the fastest warm-up GEMM predicts, and a few more."""
    return math.ceil(CAPACITY_MARGIN * bucket_s * 1e3 / max(fastest_gemm_ms, 1e-3)) + CAPACITY_EXTRA


def capacities(fastest_gemm_ms: float, bucket_s: float) -> set[int]:
    """The bucket capacities a recorded warm-up time allows: the probe rounds the time to GEMM_MS_DECIMALS
    decimals (0.1 us) for the document, and a build before 2026-12-02 sized the capacity from the time
    before rounding, so a capacity from anywhere within half a unit of the last decimal is the probe's
    (one H200 dossier, 2026-12-02: 2.7624 ms recorded, 740 sized, 741 from the rounded time)."""
    half = 0.5 * 10.0**-GEMM_MS_DECIMALS
    return {bucket_capacity(fastest_gemm_ms + d, bucket_s) for d in (-half, 0.0, half)}


def bucket_discrepancies(where: str, gemm: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The GEMM phase's buckets (GEMM, of the device record at WHERE) against the SETTINGS they were run by."""
    buckets, found = gemm.get("buckets", []), []
    warmup = gemm.get("warmup", {})
    capacity = warmup.get("bucket_capacity_iterations")
    if is_a(warmup.get("fastest_gemm_ms"), (int, float)) and capacity not in capacities(
        warmup["fastest_gemm_ms"], settings["bucket_s"]
    ):
        found.append(
            f"{where}.gemm.warmup.bucket_capacity_iterations {capacity}, but a {settings['bucket_s']:g} s "
            f"bucket after a {warmup['fastest_gemm_ms']} ms GEMM holds "
            f"{bucket_capacity(warmup['fastest_gemm_ms'], settings['bucket_s'])}"
        )
    check_on = settings.get("check", {}).get("enabled")
    started, seconds, bucket_s = gemm.get("started_s"), settings["seconds"], settings["bucket_s"]
    # a worker killed before its phase ended recorded no start: the document takes bucket 0's, which is
    # later than the phase's (bucket 0 is opened after its counts are allocated), so its boundaries are
    # late by that much and "closed before its boundary" cannot be told from it
    exact_start = gemm.get("completed") is not False
    first = 0
    lags: list[float] = []
    previous_end: Any = started  # a number wherever it is read (under is_a(started, ...) below)
    for i, bucket in enumerate(buckets):
        at = f"{where}.gemm.buckets[{i}]"
        found += _chain_discrepancies(at, bucket, i, first, capacity, check_on)
        first += bucket.get("iterations", 0)
        if is_a(started, (int, float)):
            boundary = started + min((i + 1) * bucket_s, seconds)
            found += _closing_discrepancies(at, bucket, previous_end, (boundary, exact_start), lags)
            previous_end = bucket["end_s"]
    if lags and statistics.median(lags) > MEDIAN_LAG_MAX_SHARE * bucket_s:
        found.append(
            f"{where}.gemm: buckets close a median {statistics.median(lags):.4f} s after their boundaries, "
            f"more than {MEDIAN_LAG_MAX_SHARE:g} of bucket_s {bucket_s:g} s: not a {bucket_s:g} s bucket's run"
        )
    return found + _phase_discrepancies(where, gemm, first, seconds)


def _chain_discrepancies(
    at: str, bucket: dict[str, Any], i: int, first: int, capacity: Any, check_on: Any
) -> list[str]:
    """Bucket I (at AT) against the buckets before it (FIRST: the iterations they hold), its own times and
    counts, and the CAPACITY it closes at."""
    found = []
    counts = bucket.get("mismatched_elements")
    if bucket.get("index") != i or bucket.get("first_iteration") != first:
        found.append(
            f"{at}: index {bucket.get('index')}, first iteration {bucket.get('first_iteration')}; the "
            f"buckets before it make it bucket {i} from iteration {first}"
        )
    if (
        bucket.get("iterations") != len(bucket.get("gemm_ms", []))
        or (counts is None) == bool(check_on)
        or (counts is not None and len(counts) != bucket.get("iterations"))
    ):
        found.append(
            f"{at}: {bucket.get('iterations')} iterations, {len(bucket.get('gemm_ms', []))} GEMM times and "
            f"{'no' if counts is None else len(counts)} bit-check counts (the check is "
            f"{'on' if check_on else 'off'})"
        )
    if math.fsum(bucket.get("gemm_ms", [])) > bucket.get("span_ms", 0) + 1e-4 * len(bucket.get("gemm_ms", [])):
        found.append(f"{at}: its GEMM times add up to more than its span ({bucket.get('span_ms')} ms)")
    if (bucket.get("closed_by") == "capacity") != (bucket.get("iterations") == capacity):
        found.append(
            f"{at}: closed by {bucket.get('closed_by')} with {bucket.get('iterations')} of {capacity} iterations"
        )
    return found


def _closing_discrepancies(
    at: str, bucket: dict[str, Any], previous_end: float, boundary: tuple[float, bool], lags: list[float]
) -> list[str]:
    """A bucket (at AT) starts after PREVIOUS_END and, closed by time, at or after its BOUNDARY (the time,
    and whether the phase's start it is counted from was recorded, not taken from bucket 0); how long after
    is added to LAGS."""
    found = []
    boundary_s, exact_start = boundary
    if not previous_end - ROUNDING_S <= bucket["start_s"] <= bucket["end_s"]:
        found.append(
            f"{at}: starts at {bucket['start_s']} s, before the bucket or phase before it ended "
            f"({previous_end} s), or after it ends"
        )
    if bucket.get("closed_by") == "time":
        if exact_start and bucket["end_s"] < boundary_s - ROUNDING_S:
            found.append(
                f"{at}: closed by time at {bucket['end_s']} s, before its boundary {boundary_s:.4f} s "
                f"(started_s + min((i + 1) bucket_s, seconds))"
            )
        lags.append(bucket["end_s"] - boundary_s)
    return found


def _phase_discrepancies(where: str, gemm: dict[str, Any], iterations: int, seconds: float) -> list[str]:
    """The GEMM phase against its buckets (ITERATIONS: what they hold) and the SECONDS it was to run."""
    found = []
    buckets, started, warmup = gemm.get("buckets", []), gemm.get("started_s"), gemm.get("warmup", {})
    if gemm.get("iterations") != iterations:
        found.append(f"{where}.gemm.iterations {gemm.get('iterations')}, but its buckets hold {iterations}")
    if (
        buckets
        and is_a(gemm.get("finished_s"), (int, float))
        and gemm["finished_s"] < buckets[-1]["end_s"] - ROUNDING_S
    ):
        found.append(f"{where}.gemm.finished_s {gemm['finished_s']} before its last bucket ends")
    if (
        gemm.get("completed")
        and is_a(started, (int, float))
        and is_a(gemm.get("finished_s"), (int, float))
        and gemm["finished_s"] - started < seconds - ROUNDING_S
    ):
        found.append(f"{where}.gemm: completed, but ran {gemm['finished_s'] - started:.4f} s of its {seconds:g} s")
    if (
        is_a(warmup.get("reference_at_s"), (int, float))
        and is_a(started, (int, float))
        and warmup["reference_at_s"] > started
    ):
        found.append(f"{where}.gemm.warmup.reference_at_s {warmup['reference_at_s']} after the GEMM phase started")
    return found
