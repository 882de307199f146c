"""One device's record in stress.json, assembled from its worker's events (and how the worker ended).

Standard library only. Whatever the worker wrote before it ended is kept: the buckets, samples and
NVML events of a worker that died half way are in its record beside the failure that ended it.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.stress import figures as analysis
from harness.probes.contract import unavailable


def _first(events: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((e for e in events if e.get("event") == kind), None)


def _all(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == kind]


def _gemm(events: list[dict[str, Any]], samples: list[dict[str, Any]], flop: int) -> Any:
    started = _first(events, "gemm_started")
    if started is None:
        return unavailable("the worker ended before the GEMM phase began")
    buckets = [e["bucket"] for e in _all(events, "bucket")]
    for bucket in buckets:
        bucket["figures"] = analysis.bucket_figures(bucket, samples, flop)
    finished = _first(events, "gemm_finished")
    digest = {"reference_digest": started["reference_digest"]} if "reference_digest" in started else {}
    return {
        "warmup": started["warmup"],
        **digest,
        "started_s": finished["started_s"] if finished else (buckets[0]["start_s"] if buckets else None),
        "finished_s": finished["finished_s"] if finished else (buckets[-1]["end_s"] if buckets else None),
        "iterations": sum(b["iterations"] for b in buckets),
        "completed": finished is not None,
        "buckets": buckets,
    }


def _memory(events: list[dict[str, Any]], enabled: bool) -> Any:
    started = _first(events, "memory_started")
    if started is None:
        return unavailable("not run: --no-memory-test" if not enabled else "the worker ended before the memory test")
    finished = _first(events, "memory_finished")
    fields = {k: v for k, v in started.items() if k not in ("event", "at")}
    return {
        **fields,
        "word_bytes": 8,
        "end_s": finished["end_s"] if finished else None,
        "completed": finished is not None,
        "patterns": [e["record"] for e in _all(events, "memory_pattern")],
    }


def _failure(worker: Any, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    error = _first(events, "error")
    ending = worker.ending()
    if ending["exit_code"] == 0 and error is None and _first(events, "finish") is not None:
        return None
    how = ending["stopped_by_probe"] or (
        f"killed by {ending['signal']}" if ending["signal"] else f"exited with code {ending['exit_code']}"
    )
    where = error["phase"] if error else _last_phase(events)
    message = f"worker {worker.index} {how} during the {where}" + (f": {error['message']}" if error else "")
    return {"phase": where, "message": message, **ending, "traceback_tail": error["traceback"] if error else None}


def _last_phase(events: list[dict[str, Any]]) -> str:
    order = (
        ("memory_pattern", "memory test"),
        ("memory_started", "memory test"),
        ("gemm_finished", "memory test setup"),
        ("bucket", "GEMM phase"),
        ("gemm_started", "GEMM phase"),
        ("ready", "GEMM setup"),
    )
    kinds = {e.get("event") for e in events}
    return next((phase for kind, phase in order if kind in kinds), "worker start")


def device_record(worker: Any, settings: dict[str, Any]) -> dict[str, Any]:
    events = worker.events
    ready = _first(events, "ready") or {}
    facts = ready.get("facts", {})
    nvml = ready.get("nvml", unavailable("the worker ended before it read NVML"))
    no_nvml = nvml if "unavailable" in nvml else None
    samples = [s for e in _all(events, "samples") for s in e["samples"]]
    finish = _first(events, "finish") or {}
    nvml_events = ready.get("nvml_events", no_nvml or unavailable("not registered"))
    if isinstance(nvml_events, dict) and "unavailable" not in nvml_events:
        nvml_events = {
            **nvml_events,
            "events": [e["record"] for e in _all(events, "nvml_event")],
            "wait_error": finish.get("nvml_events_wait_error"),
        }
    telemetry = no_nvml if no_nvml else {"interval_s": settings["sample_interval_s"], "samples": samples}
    faults = [
        f
        for f in (_first(events, "gemm_finished") or {}, _first(events, "memory_finished") or {})
        if f.get("fault_injected")
    ]
    failure = _failure(worker, events)
    return {
        "index": worker.index,
        "status": "failed" if failure else "completed",
        "name": facts.get("name"),
        "uuid": facts.get("uuid"),
        "facts": facts,
        "nvml": nvml,
        "power_limit_w": ready.get("power_limit_w", no_nvml or unavailable("not read")),
        "counters_before": ready.get("counters_before", no_nvml or unavailable("not read")),
        "counters_after": finish.get("counters_after", no_nvml or unavailable("the worker ended before reading them")),
        "nvml_events": nvml_events,
        "telemetry": telemetry,
        "gemm": _gemm(events, samples, settings["flop_per_gemm"]),
        "memory_test": _memory(events, settings["memory_test"]["enabled"]),
        "faults_injected": [f["fault_injected"] for f in faults],
        "failure": failure,
    }
