"""What a verified bundle gives a vendor ticket: the failing criteria with their raw data, the GPUs'
identity and ECC and row-remap counters as the run recorded them, and what the run ruled out (other
processes, host contention where the bundle records it, configuration).

Everything here is read from the bundle's own signed members and names the member it came from, so
each fact in the evidence archive is traceable to raw JSON that the bundle's signature covers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.verdict import Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.present.verdict import run_verdict
from harness.probes.contract import unavailable

HEALTH, HEALTH_LOAD, HEALTH_DIFF, STRESS = "health", "health-load", "health-diff", "stress"
PROCESS_CHECKS = ("no_foreign_process", "no_unexpected_process")  # health's contract, health-diff's check
CONTENTION_KEYS = ("host_contention", "contention")  # where a bundle that samples host contention records it


def step_members(files: Mapping[str, bytes], step: str) -> list[str]:
    """The bundle's members of STEP's data: its raw and derived JSON and its stderr, where present."""
    names = (layout.raw_name(step), layout.derived_name(step), layout.stderr_name(step))
    return [name for name in names if name in files]


def failures(view: BundleView) -> list[dict[str, Any]]:
    """Every criterion (or step no criterion reads) that FAILED, with its figures and members."""
    verdict = run_verdict(view)
    results = {r.name: r for r in verdict.results}
    found = []
    for line in verdict.lines:
        if line.verdict != Verdict.FAIL:
            continue
        result = results.get(line.name)
        steps = list(result.steps) if result is not None else [line.name]
        entry: dict[str, Any] = result.to_json() if result is not None else {"name": line.name, "title": line.name}
        entry = {**entry, "status": str(line.verdict), "why": line.why}
        entry["findings"] = list(result.findings) if result is not None else [line.why]
        entry["steps"] = steps
        entry["members"] = sorted({m for step in steps for m in step_members(view.files, step)})
        found.append(entry)
    return found


def _document(view: BundleView, step: str) -> dict[str, Any] | None:
    document = view.documents.get(step)
    return document if isinstance(document, dict) else None


def _devices(document: dict[str, Any] | None) -> list[dict[str, Any]]:
    devices = (document or {}).get("devices")
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def identity(view: BundleView) -> Any:
    """The GPUs as the run's idle health step recorded them (raw/health.json)."""
    health = _document(view, HEALTH)
    if health is None:
        return unavailable("the bundle has no health step (raw/health.json)")
    if not isinstance(health.get("devices"), list):
        return unavailable(f"raw/health.json records no GPU: {(health.get('devices') or {}).get('unavailable')}")
    keys = ("nvml_index", "uuid", "name", "board_part_number", "vbios_version", "pci_bus_id", "pci_device_id")
    return {"source": layout.raw_name(HEALTH), "devices": [{k: d.get(k) for k in keys} for d in _devices(health)]}


def ecc_history(view: BundleView) -> Any:
    """ECC and row-remap counters as recorded: at idle (health) and before and after the stress load."""
    health, stress = _document(view, HEALTH), _document(view, STRESS)
    if health is None and stress is None:
        return unavailable("the bundle has neither a health nor a stress step")
    idle = [{"nvml_index": d.get("nvml_index"), "uuid": d.get("uuid"), "ecc": d.get("ecc")} for d in _devices(health)]
    under_load = [
        {
            "index": d.get("index"),
            "uuid": d.get("uuid"),
            "counters_before": d.get("counters_before"),
            "counters_after": d.get("counters_after"),
            "nvml_events": d.get("nvml_events"),
        }
        for d in _devices(stress)
    ]
    return {
        "idle": {"source": layout.raw_name(HEALTH), "devices": idle} if health else unavailable("no health step"),
        "stress": {"source": layout.raw_name(STRESS), "devices": under_load}
        if stress
        else unavailable("no stress step"),
    }


def _checks_named(document: dict[str, Any] | None, key: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    entries = (document or {}).get(key)
    if not isinstance(entries, list):
        return []
    return [
        {k: e.get(k) for k in ("name", "device", "status", "evidence") if k in e}
        for e in entries
        if isinstance(e, dict) and e.get("name") in names
    ]


def contention(view: BundleView) -> Any:
    """Host contention as the bundle records it, where it does (commands.json, environment.json or a
    health document); else why there is none."""
    places = {
        layout.COMMANDS: view.commands,
        layout.ENVIRONMENT: view.environment,
        layout.raw_name(HEALTH): _document(view, HEALTH),
        layout.raw_name(HEALTH_LOAD): _document(view, HEALTH_LOAD),
    }
    for member, document in places.items():
        for key in CONTENTION_KEYS:
            if isinstance(document, dict) and key in document:
                return {"source": f"{member} {key}", "recorded": document[key]}
    return unavailable(
        "this bundle records no host contention sampling (none in commands.json, environment.json or the "
        "health documents: bundles made before the host's contention was sampled have none)"
    )


def ruled_out(view: BundleView) -> dict[str, Any]:
    """What the run ruled out, each with the members it comes from."""
    health, diff = _document(view, HEALTH), _document(view, HEALTH_DIFF)
    processes = _checks_named(health, "contracts", PROCESS_CHECKS) + _checks_named(diff, "checks", PROCESS_CHECKS)
    named = tuple(str(c.get("name")) for c in (health or {}).get("contracts", []) if isinstance(c, dict))
    configuration = _checks_named(health, "contracts", named)
    return {
        "other_processes": {
            "source": [layout.raw_name(HEALTH), layout.derived_name(HEALTH_DIFF)],
            "checks": processes,
            "idle": [{"nvml_index": d.get("nvml_index"), "processes": d.get("processes")} for d in _devices(health)],
        }
        if processes or health
        else unavailable("the bundle has no health step"),
        "host_contention": contention(view),
        "configuration": {
            "source": [layout.raw_name(HEALTH), layout.COMMANDS],
            "contracts": configuration,
            "runner": view.commands.get("runner"),
            "images": sorted({s.get("image") for s in view.steps if s.get("image")}),
        },
    }
