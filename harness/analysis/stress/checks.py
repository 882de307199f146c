"""The stress document's raw records against each other and against its settings (issue 28).

Standard library only. harness.analysis.stress recomputes every figure from the raw per-GEMM times,
per-iteration mismatch counts, per-chunk memory counts and NVML samples; this module checks what
those figures do not: that the records are what the probe's loops write for the settings stated.
The buckets chain and close where their settings put them (harness.analysis.stress.buckets), the
memory test covered the region its settings give (harness.analysis.stress.memory_test), the telemetry
was sampled at the stated interval, injected faults are the ones asked for, the rules and patterns
stated are this build's, and each GPU's reference digest describes the GEMM the settings ran (its
dtype, shape, bytes, seed, which GEMM, the torch and libraries the worker reported; every GPU that
reached the GEMM phase records one, or none does: a digest left out cannot hide a GPU from the digest
quorum). A record the probe could not have written for its own settings is a discrepancy, named.
"""

from __future__ import annotations

import statistics
from typing import Any

from harness.analysis.stress import telemetry as tel
from harness.analysis.stress.buckets import bucket_discrepancies
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
from harness.analysis.stress.memory_test import memory_discrepancies
from harness.analysis.stress.recorded import is_a

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
    if (share is not None) if cpu else not (is_a(share, (int, float)) and 0 < share <= 1):
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
        "bytes": m * n * width if is_a(m, int) and is_a(n, int) and width else None,
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
        and is_a(interval, (int, float))
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
            found += bucket_discrepancies(where, gemm, settings) + _digest_discrepancies(where, record, document)
            if not gemm.get("completed") and not record.get("failure"):
                found.append(f"{where}.gemm did not complete, but the worker has no failure")
        found += memory_discrepancies(where, record, document)
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
