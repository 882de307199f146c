"""The stress document's memory test records against the probe's loop (issue 28): the region follows
from the free memory (or a CPU's host budget), share and chunk (plan_region), every pattern covered it in
order, a recorded first failure is the first failing word, and the test ran after the GEMM phase for at
least as long as its patterns took."""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.stress.figures import MEMORY_PATTERNS, WORD_BYTES
from harness.analysis.stress.recorded import ROUNDING_S, is_a


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


def memory_discrepancies(where: str, record: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """The memory test of the device RECORD at WHERE against the DOCUMENT's settings and device."""
    settings, test = document["settings"], record.get("memory_test")
    enabled = settings["memory_test"].get("enabled")
    if not isinstance(test, dict) or "unavailable" in test:
        return _not_run_discrepancies(where, test, enabled, record)
    found = [] if enabled else [f"{where}.memory_test ran, but settings.memory_test.enabled is false"]
    found += _region_discrepancies(where, test, document)
    region, chunk = test.get("region_bytes"), test.get("chunk_bytes")
    chunks = test.get("chunks")
    if not is_a(region, int) or not is_a(chunk, int) or chunk <= 0 or chunks != -(-region // chunk):
        found.append(f"{where}.memory_test.chunks {chunks} for {region} bytes in {chunk}-byte chunks")
        return found
    found += _pattern_discrepancies(where, test, record, region, chunk, chunks)
    return found + _timing_discrepancies(where, test, record)


def _not_run_discrepancies(where: str, test: Any, enabled: Any, record: dict[str, Any]) -> list[str]:
    """A memory test not run (TEST: its record) is one disabled, or one the worker failed before."""
    why = str(test.get("unavailable")) if isinstance(test, dict) else repr(test)
    skipped = "--no-memory-test" in why  # else the worker ended before it
    if (not enabled) if skipped else (enabled and record.get("failure")):
        return []
    return [
        f"{where}.memory_test: not run ({why[:80]}), but the memory test is "
        f"{'enabled' if enabled else 'disabled'} and the worker {'failed' if record.get('failure') else 'completed'}"
    ]


def _region_discrepancies(where: str, test: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """Where the memory TEST ran and the region it took against what the DOCUMENT's device and settings give."""
    settings, found = document["settings"], []
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
    return found


def _pattern_discrepancies(
    where: str, test: dict[str, Any], record: dict[str, Any], region: int, chunk: int, chunks: int
) -> list[str]:
    """The memory TEST's patterns: written in order, each over the REGION's CHUNKS, first failures the first."""
    found = []
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
        or not is_a(in_chunk, int)
        or not 0 <= in_chunk < chunk_bytes
        or in_chunk % WORD_BYTES
    ):
        found.append(
            f"{at}.first_failure: chunk {failure.get('chunk')} at {offset} ({in_chunk} in the chunk), but the "
            f"first failing chunk is {failing} of {chunk_bytes}-byte chunks"
        )
    expected = pattern_word(pattern.get("pattern", ""), offset) if is_a(offset, int) else None
    if expected is not None and failure.get("expected_hex") != f"{expected:016x}":
        found.append(
            f"{at}.first_failure.expected_hex {failure.get('expected_hex')}, but {pattern['pattern']} writes "
            f"{expected:016x} at byte {offset}"
        )
    if failure.get("found_hex") == failure.get("expected_hex"):
        found.append(f"{at}.first_failure: found what was expected: not a failure")
    return found


def _timing_discrepancies(where: str, test: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """The memory TEST starts after the GEMM phase ended and lasts as long as its patterns took."""
    found = []
    patterns = test.get("patterns", [])
    gemm = record.get("gemm")
    gemm = gemm if isinstance(gemm, dict) else {}
    start, end = test.get("start_s"), test.get("end_s")
    if (
        is_a(gemm.get("finished_s"), (int, float))
        and is_a(start, (int, float))
        and start < gemm["finished_s"] - ROUNDING_S
    ):
        found.append(f"{where}.memory_test starts at {start} s, before the GEMM phase ended ({gemm['finished_s']} s)")
    spent = math.fsum(p.get("write_ms", 0) + p.get("check_ms", 0) for p in patterns) / 1e3
    if is_a(end, (int, float)) and is_a(start, (int, float)) and end - start < spent - ROUNDING_S:
        found.append(f"{where}.memory_test: {end - start:.4f} s from start to end, but its patterns took {spent:.4f} s")
    return found
