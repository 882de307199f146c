"""Stress probe analysis: every headline recomputed from the raw data the document keeps.

Standard library only. Per device: each one-second bucket's TFLOPS from its raw per-GEMM CUDA-event
times, its telemetry from the raw NVML samples; the burst (first bucket) and steady (median of the
second half's buckets) rates; when the power cap engaged; power against the limit; the reason
histogram; result mismatches from the per-iteration counts; memory-test errors from the per-chunk
counts; XID/ECC events and the error counters before and after. Each device's checks are judged from
those, the verdict failing on any failed one; `dossier verify` compares every stated figure with this.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from harness.analysis.memo import per_document
from harness.analysis.stress import telemetry as tel
from harness.analysis.stress.device_record import DeviceRecord
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict, parse, recorded

STEADY_RULE = (
    "steady state: the median of the buckets in the second half of the GEMM phase "
    "(buckets[n // 2:]); burst: the first bucket"
)
RESULT_RULE = "fails on any GEMM output element whose bits differ from the reference (tolerance 0 bits)"
TOLERANCE_BITS = 0  # the result check's tolerance (RESULT_RULE)
MEMORY_RULE = "fails on any 64-bit word read back different from the pattern written"
EVENTS_RULE = "fails on any XID or ECC event NVML delivered during the run"
COUNTERS_RULE = (
    "fails on new volatile uncorrected ECC errors, new remapped rows, or a row-remap pending "
    "or failure flag raised during the run (corrected ECC errors are reported, not failed)"
)
WORD_BYTES = 8  # the memory test's word
MEMORY_PATTERNS: dict[str, str] = {
    "walking_ones": "word i holds 1 << (i mod 64): a single one walks through the 64 bits of consecutive words",
    "walking_zeros": "word i holds ~(1 << (i mod 64)): a single zero walks through the 64 bits",
    "address": "word i holds its own byte offset in the region (8 i): a word answering for another "
    "address (an address-line fault) holds the wrong offset",
    "random": "word i holds 64 random bits from torch's generator on the device, seeded with the probe's "
    "seed plus the chunk index, drawn again for the check",
}
REL_TOL = 1e-9
LISTED_MAX = 10  # failing iterations named in one line of evidence


def _sum(values: list[Any]) -> float:
    return math.fsum(values)


def bucket_figures(bucket: dict[str, Any], samples: list[dict[str, Any]], flop_per_gemm: int) -> dict[str, Any]:
    """One bucket's rates from its GEMM times and span, and what NVML saw during it."""
    flop = bucket["iterations"] * flop_per_gemm
    counts = bucket.get("mismatched_elements")
    return {
        "tflops": flop / (_sum(bucket["gemm_ms"]) / 1e3) / 1e12,
        "throughput_tflops": flop / (bucket["span_ms"] / 1e3) / 1e12,
        "mismatched_elements": sum(counts) if counts is not None else None,
        **tel.bucket_telemetry(samples, bucket["start_s"], bucket["end_s"]),
    }


def samples_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    telemetry = record.get("telemetry")
    return telemetry.get("samples", []) if isinstance(telemetry, dict) and "unavailable" not in telemetry else []


def buckets_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    gemm = record.get("gemm")
    return gemm.get("buckets", []) if isinstance(gemm, dict) and "unavailable" not in gemm else []


def rates(record: dict[str, Any], flop_per_gemm: int) -> dict[str, Any]:
    """Burst, steady, their ratio, the steady throughput and the share of steady time outside GEMMs."""
    buckets = buckets_of(record)
    if not buckets:
        return {
            "buckets": 0,
            "burst_tflops": None,
            "steady_tflops": None,
            "burst_over_steady": None,
            "steady_throughput_tflops": None,
            "steady_outside_gemm_share": None,
        }
    figures = [bucket_figures(b, [], flop_per_gemm) for b in buckets]
    steady, steady_figures = buckets[len(buckets) // 2 :], figures[len(buckets) // 2 :]
    burst = figures[0]["tflops"]
    median = statistics.median(f["tflops"] for f in steady_figures)
    gemm_ms = _sum([_sum(b["gemm_ms"]) for b in steady])
    return {
        "buckets": len(buckets),
        "burst_tflops": burst,
        "steady_tflops": median,
        "burst_over_steady": burst / median,
        "steady_throughput_tflops": statistics.median(f["throughput_tflops"] for f in steady_figures),
        "steady_outside_gemm_share": 1 - gemm_ms / _sum([b["span_ms"] for b in steady]),
    }


def clocks_of(record: dict[str, Any]) -> dict[str, float | None]:
    """The SM clock NVML sampled in the first bucket (the burst) and the median of the steady buckets'
    median clocks (the second half), MHz; None where no sample fell inside."""
    samples, buckets = samples_of(record), buckets_of(record)
    clocks = [tel.bucket_telemetry(samples, b["start_s"], b["end_s"])["sm_clock_mhz"] for b in buckets]
    steady = [c for c in clocks[len(clocks) // 2 :] if c is not None]
    return {
        "burst_sm_clock_mhz": clocks[0] if clocks else None,
        "steady_sm_clock_mhz": statistics.median(steady) if steady else None,
    }


def result_check(record: dict[str, Any], enabled: bool) -> dict[str, Any]:
    """Iterations checked and every iteration with mismatched elements, from the per-iteration counts."""
    failing, checked = [], 0
    for bucket in buckets_of(record):
        counts = bucket.get("mismatched_elements")
        if counts is None:
            continue
        checked += len(counts)
        if any(counts):  # most buckets have none: skip the per-iteration walk at C speed
            failing += [{"iteration": bucket["first_iteration"] + i, "count": c} for i, c in enumerate(counts) if c]
    return {
        "enabled": enabled,
        "iterations_checked": checked,
        "failing_iterations": failing,
        "mismatched_elements": sum(f["count"] for f in failing),
    }


def memory_figures(record: dict[str, Any]) -> dict[str, Any] | None:
    test = record.get("memory_test")
    if not isinstance(test, dict) or "unavailable" in test:
        return None
    patterns = test.get("patterns", [])
    first = next(({"pattern": p["pattern"], **p["first_failure"]} for p in patterns if p.get("first_failure")), None)
    return {
        "where": test["where"],
        "patterns": len(patterns),
        "bytes_tested": sum(p["bytes_written"] for p in patterns),
        "seconds": _sum([p["write_ms"] + p["check_ms"] for p in patterns]) / 1e3,
        "mismatched_words": sum(sum(p["mismatched_words_per_chunk"]) for p in patterns),
        "first_failure": first,
    }


def event_figures(record: dict[str, Any]) -> dict[str, Any] | None:
    events = record.get("nvml_events")
    if not isinstance(events, dict) or "unavailable" in events:
        return None
    found = events.get("events", [])
    return {
        "xids": [e["xid"] for e in found if "xid" in e],
        "ecc_events": sum(1 for e in found if "ecc" in e["event_type"]),
        "events": len(found),
        "wait_error": events.get("wait_error"),
    }


def counter_figures(record: dict[str, Any]) -> dict[str, Any] | None:
    """What the error counters gained during the run (only where both readings are numbers)."""
    before, after = record.get("counters_before"), record.get("counters_after")
    if not isinstance(before, dict) or not isinstance(after, dict) or "unavailable" in before or "unavailable" in after:
        return None
    new = {}
    for key in (
        "volatile_corrected_errors",
        "volatile_uncorrected_errors",
        "remapped_rows_corrected",
        "remapped_rows_uncorrected",
    ):
        a, b = number_or_none(before.get(key)), number_or_none(after.get(key))
        new[key] = b - a if a is not None and b is not None else None
    for flag in ("remapped_rows_pending", "remapped_rows_failure"):
        a, b = before.get(flag), after.get(flag)
        new[f"{flag}_raised"] = (b is True and a is not True) if isinstance(b, bool) else None
    return new


def device_headlines(record: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    samples = samples_of(record)
    gemm = record.get("gemm")
    gemm = gemm if isinstance(gemm, dict) else {}
    start, end = gemm.get("started_s"), gemm.get("finished_s")
    phase = tel.between(samples, start, end) if start is not None and end is not None else []
    test = record.get("memory_test")
    memory = test if isinstance(test, dict) else {}
    # (phase is empty unless both ends are known; memory.get("end_s", end) would type as Optional)
    loaded = (
        tel.between(samples, start, memory["end_s"] if "end_s" in memory else end)
        if phase and start is not None and end is not None
        else []
    )
    limit = number_or_none(record.get("power_limit_w"))
    cap = (
        tel.power_cap(samples, start, end, limit)
        if start is not None and end is not None
        else {"engaged_after_s": None, "why_never": "no GEMM phase"}
    )
    histogram = tel.reason_histogram(loaded)
    flagged = [r for r in tel.FLAGGED_REASONS if r in histogram]
    heads = {
        "index": record["index"],
        "name": record.get("name"),
        "uuid": record.get("uuid"),
        "status": record["status"],
        **rates(record, settings["flop_per_gemm"]),
        "power_cap": cap,
        "power": tel.power_figures(phase, limit, cap, flagged),
        "clock_event_reasons": histogram,
        "flagged_reasons": flagged,
        "max_gpu_temperature_c": max(tel.values(loaded, "gpu_temperature_c"), default=None),
        "max_memory_temperature_c": max(tel.values(loaded, "memory_temperature_c"), default=None),
        "result_check": result_check(record, settings["check"]["enabled"]),
        "memory_test": memory_figures(record),
        "nvml_events": event_figures(record),
        "counters_new": counter_figures(record),
    }
    heads["checks"] = judge(record, heads, bool(loaded))
    return heads


def judge(record: dict[str, Any], heads: dict[str, Any], sampled: bool) -> list[dict[str, str]]:
    """Each check: pass, fail or not-measured, with its evidence."""

    def check(name: str, status: Verdict, evidence: str) -> dict[str, str]:
        return {"name": name, "status": recorded(status), "evidence": evidence}  # stress.json's words

    raw = DeviceRecord.from_record(record)
    checks = [
        check(
            "worker",
            Verdict.FAIL if raw.failure is not None else Verdict.PASS,
            raw.failure if raw.failure is not None else "completed every phase",
        )
    ]
    checks.append(_result_check(heads["result_check"], check))
    checks.append(_memory_check(raw, heads["memory_test"], check))
    checks.append(_events_check(raw, heads["nvml_events"], check))
    checks.append(_counters_check(raw, heads["counters_new"], check))
    if not sampled:
        checks.append(check("clock_event_reasons", Verdict.INCOMPLETE, raw.why("telemetry", "no samples")))
    elif heads["flagged_reasons"]:
        counts = heads["clock_event_reasons"]
        checks.append(
            check(
                "clock_event_reasons",
                Verdict.FAIL,
                ", ".join(f"{r} in {counts[r]} sample(s)" for r in heads["flagged_reasons"]),
            )
        )
    else:
        checks.append(
            check(
                "clock_event_reasons",
                Verdict.PASS,
                "no hw_slowdown, thermal or power-brake sample"
                + ("; sw_power_cap (expected)" if "sw_power_cap" in heads["clock_event_reasons"] else ""),
            )
        )
    power = heads["power"]
    status = {True: Verdict.PASS, False: Verdict.FAIL, None: Verdict.INCOMPLETE}[power["target_reached"]]
    checks.append(check("power_target", status, power["why"]))
    return checks


def _memory_check(raw: DeviceRecord, memory: dict[str, Any] | None, check: Any) -> dict[str, str]:
    if memory is None:
        return check("memory_test", Verdict.INCOMPLETE, raw.why("memory_test", "not run"))
    if memory["mismatched_words"]:
        f = memory["first_failure"]
        where = (
            f"first in pattern {f['pattern']} at byte offset {f['byte_offset']} (chunk {f['chunk']}, offset "
            f"{f['chunk_byte_offset']}): expected {f['expected_hex']}, found {f['found_hex']}"
            if f
            else "the first failing word was not recorded"
        )
        return check("memory_test", Verdict.FAIL, f"{memory['mismatched_words']} mismatched word(s); {where}")
    return check(
        "memory_test",
        Verdict.PASS,
        f"{memory['bytes_tested']} bytes of {memory['where']} in {memory['patterns']} patterns, no mismatch",
    )


def _result_check(result: dict[str, Any], check: Any) -> dict[str, str]:
    if not result["enabled"]:
        return check("result_check", Verdict.INCOMPLETE, "result checking disabled (--no-check)")
    if not result["iterations_checked"]:
        return check("result_check", Verdict.INCOMPLETE, "no iteration was checked")
    failing = result["failing_iterations"]
    if not failing:
        return check(
            "result_check", Verdict.PASS, f"{result['iterations_checked']} iterations bit-identical to the reference"
        )
    listed = "; ".join(f"iteration {f['iteration']}: {f['count']} element(s)" for f in failing[:LISTED_MAX])
    more = f"; and {len(failing) - LISTED_MAX} more iteration(s)" if len(failing) > LISTED_MAX else ""
    return check(
        "result_check",
        Verdict.FAIL,
        f"{len(failing)} of {result['iterations_checked']} iterations mismatched "
        f"the reference ({result['mismatched_elements']} element(s)): {listed}{more}",
    )


def _events_check(raw: DeviceRecord, events: dict[str, Any] | None, check: Any) -> dict[str, str]:
    if events is None:
        return check("nvml_events", Verdict.INCOMPLETE, raw.why("nvml_events", "no event set"))
    if events["events"]:
        return check(
            "nvml_events",
            Verdict.FAIL,
            f"{events['events']} event(s): XID {events['xids'] or 'none'}, {events['ecc_events']} ECC event(s)",
        )
    cut = f" (waiting broke off: {events['wait_error']})" if events["wait_error"] else ""
    return check("nvml_events", Verdict.PASS, f"no XID or ECC event{cut}")


def _counters_check(raw: DeviceRecord, new: dict[str, Any] | None, check: Any) -> dict[str, str]:
    if new is None:
        return check(
            "ecc_and_row_remap", Verdict.INCOMPLETE, raw.why("counters_after", raw.why("counters_before", "not read"))
        )
    bad = [
        f"{k} +{v}"
        for k, v in new.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and k != "volatile_corrected_errors"
    ]
    bad += [k for k, v in new.items() if v is True]
    corrected = new.get("volatile_corrected_errors")
    note = f"; {corrected} new corrected ECC error(s)" if corrected else ""
    if bad:
        return check("ecc_and_row_remap", Verdict.FAIL, ", ".join(bad) + note)
    return check("ecc_and_row_remap", Verdict.PASS, "no new uncorrected ECC error, remapped row or remap flag" + note)


@per_document
def headlines(document: dict[str, Any]) -> dict[str, Any]:
    settings = document["settings"]
    devices = [device_headlines(r, settings) for r in document.get("devices", [])]
    failures, not_measured = [], set()
    for d in devices:
        who = f"GPU{d['index']} ({d['name']})" if document["device"] == "cuda" else f"CPU ({d['name']})"
        failures += [f"{who}: {c['name']}: {c['evidence']}" for c in d["checks"] if parse(c["status"]) == Verdict.FAIL]
        not_measured |= {c["name"] for c in d["checks"] if parse(c["status"]) == Verdict.INCOMPLETE}
    steady = [d["steady_tflops"] for d in devices if d["steady_tflops"] is not None]
    return {
        "device": document["device"],
        "dtype": settings["dtype"],
        "shape": settings["shape"],
        "seconds": settings["seconds"],
        "devices": devices,
        "min_steady_tflops": min(steady) if steady else None,
        "verdict": {
            "status": Verdict.FAIL if failures or not devices else Verdict.PASS,
            "failures": failures or ([] if devices else ["no device was stressed"]),
            "not_measured": sorted(not_measured),
        },
    }


def _differences(path: str, stated: Any, again: Any) -> list[str]:
    if isinstance(stated, dict) and isinstance(again, dict):
        return [
            line
            for key in sorted(set(stated) | set(again))
            for line in _differences(f"{path}.{key}", stated.get(key), again.get(key))
        ]
    if isinstance(stated, list) and isinstance(again, list) and len(stated) == len(again):
        return [
            line
            for i, (a, b) in enumerate(zip(stated, again, strict=True))
            for line in _differences(f"{path}[{i}]", a, b)
        ]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (stated, again))
    counts = isinstance(stated, int) and isinstance(again, int)  # a count is exact; a rate within rounding
    if numbers and not counts and math.isclose(stated, again, rel_tol=REL_TOL, abs_tol=1e-12):
        return []
    return [] if stated == again else [f"{path}: states {stated!r}, recomputed {again!r}"]


def figure_discrepancies(document: dict[str, Any]) -> list[str]:
    """Every stated figure (the summary, each bucket's figures) that differs from the recomputation (the
    raw records the probe could not have written for its settings: harness.analysis.stress.checks)."""
    found = _differences("summary", document.get("summary"), headlines(document))
    flop = document["settings"]["flop_per_gemm"]
    for record in document.get("devices", []):
        samples = samples_of(record)
        for bucket in buckets_of(record):
            found += _differences(
                f"devices[{record['index']}].bucket[{bucket['index']}].figures",
                bucket.get("figures"),
                bucket_figures(bucket, samples, flop),
            )
    return found
