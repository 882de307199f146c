"""The stress probe's figures, declared once (harness.analysis.figure): each GPU's steady-state GEMM rate at
the power cap, its fault counts and its reference result digest decide; the first second's burst, the
power drawn and the burst over steady ratio inform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.digests import stress_conditions
from harness.analysis.figure import DECIDES, Accept, Figure, Fleet, KnownGood
from harness.analysis.fleet import DIGEST_CONDITIONS

SUSTAINED_GEMM = KnownGood("gemm_sustained_tflops", "gemm_sustained", "dtype", "TFLOPS", "{} GEMM sustained")


def devices(heads: Mapping[str, Any]) -> list[dict[str, Any]]:
    return heads.get("devices") or []


def _who(heads: Mapping[str, Any], device: Mapping[str, Any]) -> str:
    return f"gpu{device.get('index')}" if heads.get("device") == "cuda" else "cpu"


def _per_device(heads: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(gpuN, or cpu, the device's figures with the run's dtype and shape) for every device the run loaded."""
    conditions = {"dtype": heads.get("dtype"), "shape": heads.get("shape")}
    return [(_who(heads, d), {**d, "conditions": conditions}) for d in devices(heads) if isinstance(d, dict)]


def mismatches(device: dict[str, Any]) -> int | None:
    check = device["result_check"]
    return check["mismatched_elements"] if check["enabled"] and check["iterations_checked"] else None


def memory_errors(device: dict[str, Any]) -> int | None:
    return device["memory_test"]["mismatched_words"] if device["memory_test"] else None


def events(device: dict[str, Any]) -> int | None:
    return device["nvml_events"]["events"] if device["nvml_events"] else None


def _new_errors(device: dict[str, Any]) -> int | None:
    """New ECC errors and row remaps during the run (each raised flag counts one), None when not read."""
    counters = device.get("counters_new")
    if not isinstance(counters, dict):
        return None
    return sum(int(v) for v in counters.values() if isinstance(v, (int, bool)))


def _digests(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(gpuN or cpu, its reference GEMM result's digest record) for every device that recorded one."""
    found = []
    for device in document.get("devices") or []:
        gemm = device.get("gemm") if isinstance(device, dict) else None
        record = gemm.get("reference_digest") if isinstance(gemm, dict) else None
        if isinstance(record, dict):
            found.append((_who(document, device), record))
    return found


def result_digest(document: Mapping[str, Any]) -> Any:
    """The node's result digest as `dossier fleet collect` compares it across nodes, "CONDITIONS | SHA256"
    (the dtype, shape, seed, torch and cuBLAS the bits hold for, so that only digests of the same call
    compare); GPUs that disagree within a node are reported as such (a value unlike every other node's)."""
    found = [(d.get("gemm") or {}).get("reference_digest") for d in document.get("devices") or []]
    records = [r for r in found if isinstance(r, dict) and isinstance(r.get("sha256"), str)]
    if not found or len(records) != len(found):
        return {
            "unavailable": "the stress document records no result digest (the stress probe records one per GPU, "
            "devices[].gemm.reference_digest; an older build's did not)"
        }
    conditions = ", ".join(f"{key} {value}" for key, value in stress_conditions(records[0]).items())
    digests = sorted({r["sha256"] for r in records})
    if len(digests) > 1:
        return f"{conditions}{DIGEST_CONDITIONS}the node's GPUs disagree: " + ", ".join(digests)
    return f"{conditions}{DIGEST_CONDITIONS}{digests[0]}"


def _conditions(item: dict[str, Any]) -> Any:
    return item["conditions"]


def _count(name: str, unit: str, read: Any, figure: str, fleet: Fleet) -> Figure:
    return Figure(name, unit, read, role=DECIDES, each=_per_device, figure=figure, kind="count", fleet=fleet)


FIGURES = (
    Figure(
        "stress {} steady",
        "TFLOPS",
        lambda d: d.get("steady_tflops"),
        role=DECIDES,
        each=_per_device,
        figure="stress.{}.steady_tflops",
        kind="steady",
        noise="stress.steady_tflops",
        conditions=_conditions,
        fleet=Fleet(
            "stress_steady_tflops",
            "sustained: the lowest steady-state GEMM rate over the node's GPUs (median of the second half of "
            "the stress run)",
            aggregate="min",
        ),
        accept=Accept(
            SUSTAINED_GEMM, "stress_sustained_{}", "stress_sustained_min_share", lambda d: d["conditions"]["dtype"]
        ),
    ),
    Figure(
        "stress {} burst",
        "TFLOPS",
        lambda d: d.get("burst_tflops"),
        why="the first second at full clock, before the power cap engages: each dtype's roofline burst best "
        "decides the burst",
        each=_per_device,
        figure="stress.{}.burst_tflops",
        kind="burst",
        noise="stress.burst_tflops",
        conditions=_conditions,
    ),
    Figure(
        "stress {} burst over steady",
        "x",
        lambda d: d.get("burst_over_steady"),
        why="a ratio of two figures judged themselves: how far a burst overstates what the card sustains",
        each=_per_device,
        figure="stress.{}.burst_over_steady",
        kind="steady",
        noise="stress.burst_over_steady",
        conditions=_conditions,
        fleet=Fleet(
            "stress_burst_over_steady",
            "the highest first-second / steady-state rate over the node's GPUs (how far a burst overstates what "
            "the card sustains)",
            aggregate="max",
        ),
    ),
    Figure(
        "stress {} power median",
        "W",
        lambda d: (d.get("power") or {}).get("median_w"),
        why="at the power cap the card draws its limit, which the power limit field (configuration) states",
        each=_per_device,
        figure="stress.{}.power_median_w",
        kind="steady",
        noise="stress.power_median_w",
        conditions=_conditions,
    ),
    _count(
        "stress {} result mismatches",
        "elements",
        mismatches,
        "stress.{}.result_mismatches",
        Fleet(
            "stress_result_mismatches",
            "GEMM output elements that differed from the reference, summed over GPUs",
            aggregate="sum",
            kind="count",
        ),
    ),
    _count(
        "stress {} memory errors",
        "words",
        memory_errors,
        "stress.{}.memory_errors",
        Fleet(
            "stress_memory_errors", "memory-test words read back wrong, summed over GPUs", aggregate="sum", kind="count"
        ),
    ),
    _count(
        "stress {} XID and ECC events",
        "events",
        events,
        "stress.{}.xid_ecc_events",
        Fleet(
            "stress_xid_ecc_events",
            "XID and ECC events NVML delivered during the stress run, summed over GPUs",
            aggregate="sum",
            kind="count",
        ),
    ),
    Figure(
        "stress {} new ECC errors and row remaps",
        "errors",
        _new_errors,
        role=DECIDES,
        each=_per_device,
        figure="stress.{}.new_ecc_errors",
        kind="count",
    ),
    Figure(
        "stress {} reference digest",
        "sha256",
        lambda record: record.get("sha256"),
        role=DECIDES,
        each=_digests,
        figure="stress.{}.reference_digest",
        kind="exact",
        conditions=stress_conditions,
        source="document",
        fleet=Fleet(
            "stress_result_digest",
            "the sha256 of the stress run's reference GEMM output with what it holds for (dtype, shape, seed, "
            "torch, cuBLAS), compared over the nodes of one SKU and software stack",
            kind="digest",
            read=result_digest,
        ),
    ),
)
