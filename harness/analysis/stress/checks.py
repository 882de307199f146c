"""The stress document's raw records against each other and against its settings (issue 28).

Standard library only. harness.analysis.stress recomputes every figure from the raw per-GEMM times,
per-iteration mismatch counts, per-chunk memory counts and NVML samples; this module checks what
those figures do not: that the records are what the probe's loops write for the settings stated.
The buckets chain (index, first iteration, iteration counts, bit-check slots), each closes where
bucket_s and seconds put its boundary, the bucket capacity follows from the fastest warm-up GEMM,
the GEMM phase ran its seconds when it says it completed, the memory region follows from the free
memory, share and chunk (plan_region) and every pattern covered it, a recorded first failure is
the first failing word, the telemetry was sampled at the stated interval, injected faults are the
ones asked for, the rules and patterns stated are this build's, and each GPU's reference digest
describes the GEMM the settings ran (its dtype, shape, bytes, seed, which GEMM, the torch and libraries
the worker reported; every GPU that reached the GEMM phase records one, or none does: a digest left
out cannot hide a GPU from the digest quorum). A record the probe could not have written for its own
settings is a discrepancy, named.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, TypeGuard, TypeVar

from harness.analysis.stress import telemetry as tel
from harness.analysis.stress.figures import (
    COUNTERS_RULE,
    EVENTS_RULE,
    MEMORY_PATTERNS,
    MEMORY_RULE,
    RESULT_RULE,
    STEADY_RULE,
    TOLERANCE_BITS,
    WORD_BYTES,
)

# A CPU run's memory test: a budget of host memory (no share of free memory) in chunks of this size
# (the probe's CPU_CHUNK_MIB; GPU chunks are --memory-chunk-mib, the region's chunk when the test runs).
CPU_CHUNK_BYTES = 8 * 2**20
# The reference result's dtype for each GEMM dtype (harness/probes/stress/gemm.py: fp8 GEMMs write bf16)
# and its element width (harness.analysis.roofline.model.DTYPE_WIDTHS's output bytes).
RESULT_DTYPES = {
    "bf16": ("bfloat16", 2),
    "fp16": ("float16", 2),
    "fp8": ("bfloat16", 2),
    "tf32": ("float32", 4),
    "fp32": ("float32", 4),
}
CAPACITY_MARGIN = 2.0  # a bucket holds up to 2x the iterations the warm-up rate predicts...
GEMM_MS_DECIMALS = 4  # the probe records GEMM times to 0.1 us (below what CUDA events resolve, about 0.5 us)
CAPACITY_EXTRA = 16  # ...plus a few; a bucket that fills closes early (closed_by "capacity")
ROUNDING_S = 2e-4  # times are kept to 0.1 ms: two of them differ by up to this from the unrounded
# A bucket closes at the first GEMM issued after its boundary: on the lent H200 (bf16 and tf32,
# 45-60 s runs, 2026-11-30/12-01) 0.1-6.4 ms after it, on the 2-core CPU run 22-32 ms. The median
# lag is held to a tenth of a bucket: a bucket_s stated 20% off its run's moves it by that much.
MEDIAN_LAG_MAX_SHARE = 0.1
# NVML samples follow a fixed schedule (next += interval): on the lent H200 the median spacing was
# the interval to 0.1 ms. A tenth of the interval either way is the tolerance.
SAMPLE_SPACING_TOLERANCE = 0.1


def rules() -> dict[str, str]:
    """The rules a stress document states, as this build judges them."""
    return {
        "steady_state": STEADY_RULE,
        "result_check": RESULT_RULE,
        "memory_test": MEMORY_RULE,
        "nvml_events": EVENTS_RULE,
        "ecc_and_row_remap": COUNTERS_RULE,
        "clock_event_reasons": tel.FLAGGED_RULE,
        "power_target": tel.POWER_RULE,
    }


def bucket_capacity(fastest_gemm_ms: float, bucket_s: float) -> int:
    """The most GEMMs a bucket holds: twice what the fastest warm-up GEMM predicts, and a few more."""
    return math.ceil(CAPACITY_MARGIN * bucket_s * 1e3 / max(fastest_gemm_ms, 1e-3)) + CAPACITY_EXTRA


def plan_region(free_bytes: int, share: float, chunk_bytes: int) -> tuple[int, int]:
    """(region bytes, chunk bytes): whole chunks within `share` of the free bytes, with room left in that
    share for the scratch chunk and its mask; when two chunks do not fit, one chunk of a third of it."""
    usable = int(free_bytes * share)
    extra = chunk_bytes + chunk_bytes // WORD_BYTES  # the scratch chunk and its mask
    if usable >= chunk_bytes + extra:
        return (usable - extra) // chunk_bytes * chunk_bytes, chunk_bytes
    chunk = usable // 3 // WORD_BYTES * WORD_BYTES
    if chunk == 0:
        raise ValueError(f"{usable} bytes ({share:g} of {free_bytes} free) cannot hold a memory test")
    return chunk, chunk


def pattern_word(pattern: str, byte_offset: int) -> int | None:
    """The 64-bit word a pattern writes at BYTE_OFFSET of the region, or None (random: torch's generator)."""
    i = byte_offset // WORD_BYTES
    if pattern == "walking_ones":
        return 1 << (i % 64)
    if pattern == "walking_zeros":
        return ~(1 << (i % 64)) & (2**64 - 1)
    if pattern == "address":
        return byte_offset & (2**64 - 1)
    return None


T = TypeVar("T")


def _is(value: object, kind: type[T] | tuple[type[T], ...]) -> TypeGuard[T]:
    """Whether VALUE is a KIND and not a bool (JSON's true is no count); a number when KIND is (int, float)."""
    return isinstance(value, kind) and not isinstance(value, bool)


def settings_discrepancies(document: dict[str, Any]) -> list[str]:
    settings, found = document["settings"], []
    shape = settings.get("shape", {})
    if settings.get("flop_per_gemm") != 2 * shape.get("m", 0) * shape.get("n", 0) * shape.get("k", 0):
        found.append(f"settings.flop_per_gemm {settings.get('flop_per_gemm')} but a {shape} GEMM is 2 m n k")
    if settings.get("device") != document.get("device"):
        found.append(
            f"settings.device {settings.get('device')!r} but the document's device is {document.get('device')!r}"
        )
    if settings.get("check", {}).get("tolerance_bits") != TOLERANCE_BITS:
        found.append(
            f"settings.check.tolerance_bits {settings['check'].get('tolerance_bits')} but the result check "
            f"compares bits exactly ({TOLERANCE_BITS})"
        )
    memory = settings.get("memory_test", {})
    if memory.get("word_bytes") != WORD_BYTES or memory.get("patterns") != MEMORY_PATTERNS:
        found.append("settings.memory_test: word size or patterns are not the ones the memory test writes")
    cpu, share = document.get("device") == "cpu", memory.get("share_of_free")
    if (share is not None) if cpu else not (_is(share, (int, float)) and 0 < share <= 1):
        found.append(
            f"settings.memory_test.share_of_free {share!r}, but a {document.get('device')} run's memory test "
            f"{'takes a host-memory budget, no share' if cpu else 'takes a share of free memory in (0, 1]'}"
        )
    if cpu and memory.get("chunk_bytes") != CPU_CHUNK_BYTES:
        found.append(
            f"settings.memory_test.chunk_bytes {memory.get('chunk_bytes')}, but a CPU run's chunks are "
            f"{CPU_CHUNK_BYTES} bytes"
        )
    if (settings.get("inject_fault") == "gemm") != (settings.get("inject_gemm_iteration") is not None):
        found.append("settings.inject_gemm_iteration is set exactly when a GEMM fault is injected")
    if document.get("rules") != rules():
        found.append("rules differ from the rules this build judges a stress run by")
    return found


def capacities(fastest_gemm_ms: float, bucket_s: float) -> set[int]:
    """The bucket capacities a recorded warm-up time allows: the probe rounds the time to GEMM_MS_DECIMALS
    decimals (0.1 us) for the document, and a build before 2026-12-02 sized the capacity from the time
    before rounding, so a capacity from anywhere within half a unit of the last decimal is the probe's
    (one H200 dossier, 2026-12-02: 2.7624 ms recorded, 740 sized, 741 from the rounded time)."""
    half = 0.5 * 10.0**-GEMM_MS_DECIMALS
    return {bucket_capacity(fastest_gemm_ms + d, bucket_s) for d in (-half, 0.0, half)}


def _bucket_discrepancies(where: str, gemm: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    buckets, found = gemm.get("buckets", []), []
    warmup = gemm.get("warmup", {})
    capacity = warmup.get("bucket_capacity_iterations")
    if _is(warmup.get("fastest_gemm_ms"), (int, float)) and capacity not in capacities(
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
    first, lags = 0, []
    previous_end: Any = started  # a number wherever it is read (under _is(started, ...) below)
    for i, bucket in enumerate(buckets):
        at = f"{where}.gemm.buckets[{i}]"
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
        first += bucket.get("iterations", 0)
        if _is(started, (int, float)):
            boundary = started + min((i + 1) * bucket_s, seconds)
            if not previous_end - ROUNDING_S <= bucket["start_s"] <= bucket["end_s"]:
                found.append(
                    f"{at}: starts at {bucket['start_s']} s, before the bucket or phase before it ended "
                    f"({previous_end} s), or after it ends"
                )
            if bucket.get("closed_by") == "time":
                if exact_start and bucket["end_s"] < boundary - ROUNDING_S:
                    found.append(
                        f"{at}: closed by time at {bucket['end_s']} s, before its boundary {boundary:.4f} s "
                        f"(started_s + min((i + 1) bucket_s, seconds))"
                    )
                lags.append(bucket["end_s"] - boundary)
            previous_end = bucket["end_s"]
    if lags and statistics.median(lags) > MEDIAN_LAG_MAX_SHARE * bucket_s:
        found.append(
            f"{where}.gemm: buckets close a median {statistics.median(lags):.4f} s after their boundaries, "
            f"more than {MEDIAN_LAG_MAX_SHARE:g} of bucket_s {bucket_s:g} s: not a {bucket_s:g} s bucket's run"
        )
    if gemm.get("iterations") != first:
        found.append(f"{where}.gemm.iterations {gemm.get('iterations')}, but its buckets hold {first}")
    if buckets and _is(gemm.get("finished_s"), (int, float)) and gemm["finished_s"] < buckets[-1]["end_s"] - ROUNDING_S:
        found.append(f"{where}.gemm.finished_s {gemm['finished_s']} before its last bucket ends")
    if (
        gemm.get("completed")
        and _is(started, (int, float))
        and _is(gemm.get("finished_s"), (int, float))
        and gemm["finished_s"] - started < seconds - ROUNDING_S
    ):
        found.append(f"{where}.gemm: completed, but ran {gemm['finished_s'] - started:.4f} s of its {seconds:g} s")
    if (
        _is(warmup.get("reference_at_s"), (int, float))
        and _is(started, (int, float))
        and warmup["reference_at_s"] > started
    ):
        found.append(f"{where}.gemm.warmup.reference_at_s {warmup['reference_at_s']} after the GEMM phase started")
    return found


def _first_failure_discrepancies(at: str, pattern: dict[str, Any], chunk_bytes: int) -> list[str]:
    counts, failure = pattern.get("mismatched_words_per_chunk", []), pattern.get("first_failure")
    failing = next((chunk for chunk, count in enumerate(counts) if count), None)
    if failure is None or failing is None:
        return (
            []
            if failure is None and failing is None
            else [
                f"{at}: first_failure {'recorded' if failure else 'missing'}, but {sum(counts)} mismatched words counted"
            ]
        )
    found = []
    offset, in_chunk = failure.get("byte_offset"), failure.get("chunk_byte_offset")
    if (
        failure.get("chunk") != failing
        or offset != failing * chunk_bytes + (in_chunk or 0)
        or not _is(in_chunk, int)
        or not 0 <= in_chunk < chunk_bytes
        or in_chunk % WORD_BYTES
    ):
        found.append(
            f"{at}.first_failure: chunk {failure.get('chunk')} at {offset} ({in_chunk} in the chunk), but the "
            f"first failing chunk is {failing} of {chunk_bytes}-byte chunks"
        )
    expected = pattern_word(pattern.get("pattern", ""), offset) if _is(offset, int) else None
    if expected is not None and failure.get("expected_hex") != f"{expected:016x}":
        found.append(
            f"{at}.first_failure.expected_hex {failure.get('expected_hex')}, but {pattern['pattern']} writes "
            f"{expected:016x} at byte {offset}"
        )
    if failure.get("found_hex") == failure.get("expected_hex"):
        found.append(f"{at}.first_failure: found what was expected: not a failure")
    return found


def _memory_discrepancies(where: str, record: dict[str, Any], document: dict[str, Any]) -> list[str]:
    settings, test = document["settings"], record.get("memory_test")
    enabled = settings["memory_test"].get("enabled")
    if not isinstance(test, dict) or "unavailable" in test:
        why = str(test.get("unavailable")) if isinstance(test, dict) else repr(test)
        skipped = "--no-memory-test" in why  # else the worker ended before it
        if (not enabled) if skipped else (enabled and record.get("failure")):
            return []
        return [
            f"{where}.memory_test: not run ({why[:80]}), but the memory test is "
            f"{'enabled' if enabled else 'disabled'} and the worker {'failed' if record.get('failure') else 'completed'}"
        ]
    found = [] if enabled else [f"{where}.memory_test ran, but settings.memory_test.enabled is false"]
    cuda = document.get("device") == "cuda"
    if (
        test.get("where") != ("device memory" if cuda else "host memory")
        or test.get("word_bytes") != WORD_BYTES
        or test.get("share_of_free") != settings["memory_test"].get("share_of_free")
    ):
        found.append(
            f"{where}.memory_test: where, word size or share of free memory is not what a {document.get('device')} "
            "run with these settings tests"
        )
    budget: Any = test.get("free_bytes") if cuda else test.get("host_budget_bytes")  # any JSON: TypeError below
    region, chunk = test.get("region_bytes"), test.get("chunk_bytes")
    planned: tuple[int, int] | tuple[None, str]
    try:
        planned = plan_region(budget, test.get("share_of_free") or 1.0, settings["memory_test"]["chunk_bytes"])
    except (TypeError, ValueError) as exc:
        planned = (None, str(exc))
    if (
        (region, chunk) != planned
        or (test.get("free_bytes") is None) == cuda
        or (test.get("host_budget_bytes") is None) != cuda
    ):
        found.append(
            f"{where}.memory_test: region {region} bytes in {chunk}-byte chunks, but "
            f"{'free' if cuda else 'budget'} {budget} bytes at share {test.get('share_of_free')} gives {planned}"
        )
    chunks = test.get("chunks")
    if not _is(region, int) or not _is(chunk, int) or chunk <= 0 or chunks != -(-region // chunk):
        found.append(f"{where}.memory_test.chunks {chunks} for {region} bytes in {chunk}-byte chunks")
        return found
    patterns = test.get("patterns", [])
    names = [p.get("pattern") for p in patterns]
    if names != list(MEMORY_PATTERNS)[: len(names)] or (test.get("completed") and len(names) != len(MEMORY_PATTERNS)):
        found.append(
            f"{where}.memory_test: patterns {names}, completed {test.get('completed')}: the test writes "
            f"{list(MEMORY_PATTERNS)} in that order"
        )
    if not test.get("completed") and not record.get("failure"):
        found.append(f"{where}.memory_test did not complete, but the worker has no failure")
    for i, pattern in enumerate(patterns):
        at = f"{where}.memory_test.patterns[{i}]"
        if (
            pattern.get("bytes_written") != region
            or pattern.get("bytes_checked") != region
            or len(pattern.get("mismatched_words_per_chunk", [])) != chunks
        ):
            found.append(
                f"{at}: {pattern.get('bytes_written')} bytes written, {pattern.get('bytes_checked')} checked, "
                f"{len(pattern.get('mismatched_words_per_chunk', []))} chunk counts; the region is {region} "
                f"bytes in {chunks} chunks"
            )
        found += _first_failure_discrepancies(at, pattern, chunk)
    gemm = record.get("gemm")
    gemm = gemm if isinstance(gemm, dict) else {}
    start, end = test.get("start_s"), test.get("end_s")
    if (
        _is(gemm.get("finished_s"), (int, float))
        and _is(start, (int, float))
        and start < gemm["finished_s"] - ROUNDING_S
    ):
        found.append(f"{where}.memory_test starts at {start} s, before the GEMM phase ended ({gemm['finished_s']} s)")
    spent = math.fsum(p.get("write_ms", 0) + p.get("check_ms", 0) for p in patterns) / 1e3
    if _is(end, (int, float)) and _is(start, (int, float)) and end - start < spent - ROUNDING_S:
        found.append(f"{where}.memory_test: {end - start:.4f} s from start to end, but its patterns took {spent:.4f} s")
    return found


def _fault_discrepancies(where: str, record: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    asked, faults = settings.get("inject_fault"), record.get("faults_injected", [])
    kinds = [f.get("kind") for f in faults]
    if kinds not in ([], [asked]) or (asked is None and kinds) or (asked and not kinds and not record.get("failure")):
        return [f"{where}.faults_injected {kinds}, but --inject-fault was {asked!r}"]
    if kinds == ["gemm"] and faults[0].get("iteration") != settings.get("inject_gemm_iteration"):
        return [
            f"{where}.faults_injected: GEMM iteration {faults[0].get('iteration')}, but the settings inject at "
            f"{settings.get('inject_gemm_iteration')}"
        ]
    return []


def _digest_discrepancies(where: str, record: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """A reference digest describes the GEMM the settings ran: the result's dtype and [m, n] shape, its
    bytes, the seed, the GEMM after the warm-up, the torch the document reports, and the libraries of
    the run's device (cuBLAS on a GPU; CPU capability and the worker's threads on a CPU)."""
    gemm, settings = record["gemm"], document["settings"]
    digest = gemm.get("reference_digest")
    if not isinstance(digest, dict):
        return []
    shape, libraries = settings.get("shape", {}), digest.get("libraries") or {}
    dtype, width = RESULT_DTYPES.get(settings.get("dtype"), (None, None))
    m, n = shape.get("m"), shape.get("n")
    warmup = gemm.get("warmup") if isinstance(gemm.get("warmup"), dict) else {}
    expected = {
        "dtype": dtype,
        "shape": [m, n],
        "bytes": m * n * width if _is(m, int) and _is(n, int) and width else None,
        "seed": settings.get("seed"),
        "gemm_index": warmup.get("iterations", 0) + 1,
    }
    found = [
        f"{where}.gemm.reference_digest.{key} {digest.get(key)!r}, but the settings' GEMM gives {value!r}"
        for key, value in expected.items()
        if digest.get(key) != value
    ]
    if libraries.get("torch") != document.get("torch_version"):
        found.append(
            f"{where}.gemm.reference_digest.libraries.torch {libraries.get('torch')!r}, but the document's torch "
            f"is {document.get('torch_version')!r}"
        )
    gpu = document.get("device") == "cuda"
    threads = None if gpu else (record.get("facts") or {}).get("torch_threads")
    if gpu != ("cublas" in libraries) or gpu == ("cpu_capability" in libraries) or libraries.get("threads") != threads:
        found.append(
            f"{where}.gemm.reference_digest.libraries {sorted(libraries)} are not what a {document.get('device')} "
            f"worker records (threads {libraries.get('threads')!r}, the worker's {threads!r})"
        )
    return found


def _telemetry_discrepancies(where: str, record: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    telemetry = record.get("telemetry")
    if not isinstance(telemetry, dict) or "unavailable" in telemetry:
        return []
    interval = settings.get("sample_interval_s")
    found = (
        []
        if telemetry.get("interval_s") == interval
        else [
            f"{where}.telemetry.interval_s {telemetry.get('interval_s')}, but settings.sample_interval_s is {interval}"
        ]
    )
    times = [s.get("t_s") for s in telemetry.get("samples", [])]
    spacing = [b - a for a, b in zip(times, times[1:], strict=False)]
    if any(step <= 0 for step in spacing):
        found.append(f"{where}.telemetry.samples: t_s does not increase")
    elif (
        len(spacing) >= 2
        and _is(interval, (int, float))
        and abs(statistics.median(spacing) - interval) > SAMPLE_SPACING_TOLERANCE * interval
    ):
        found.append(
            f"{where}.telemetry.samples: {statistics.median(spacing):.4f} s apart (median), but sampled "
            f"every {interval} s"
        )
    return found


def record_discrepancies(document: dict[str, Any]) -> list[str]:
    """Every device record against the settings and the probe's loops; the settings against themselves."""
    settings, found = document["settings"], settings_discrepancies(document)
    for position, record in enumerate(document.get("devices", [])):
        where = f"devices[{record.get('index')}]"
        if record.get("index") != position:
            found.append(f"{where}: index {record.get('index')}, but it is worker {position} of the run")
        if (record.get("status") == "failed") != bool(record.get("failure")):
            found.append(f"{where}: status {record.get('status')!r} but failure is {record.get('failure')!r:.80}")
        facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
        if any(key in facts and facts[key] != record.get(key) for key in ("name", "uuid")):
            found.append(f"{where}: name or uuid differs from the device facts it was read from")
        gemm = record.get("gemm")
        if isinstance(gemm, dict) and "unavailable" not in gemm:
            found += _bucket_discrepancies(where, gemm, settings) + _digest_discrepancies(where, record, document)
            if not gemm.get("completed") and not record.get("failure"):
                found.append(f"{where}.gemm did not complete, but the worker has no failure")
        found += _memory_discrepancies(where, record, document)
        found += _fault_discrepancies(where, record, settings) + _telemetry_discrepancies(where, record, settings)
    gemms = [
        r["gemm"]
        for r in document.get("devices", [])
        if isinstance(r.get("gemm"), dict) and "unavailable" not in r["gemm"]
    ]
    with_digest = sum("reference_digest" in gemm for gemm in gemms)
    if 0 < with_digest < len(gemms):
        found.append(
            f"{with_digest} of the {len(gemms)} GPUs that ran the GEMM phase record a reference digest: the "
            "probe records one for each (a digest left out would hide its GPU from the quorum)"
        )
    return found
