"""Idle vs under-load health (lab step M1T5.7): what changed, and the checks on it.

Pure and standard-library only. `diff(idle, active)` takes two health.json documents, the
second taken with `--under-load`, and returns the health-diff document
(schemas/health-diff.schema.json). The checks, per device matched by UUID:

- clocks_rose: the SM clock under load (median of the samples taken while the load ran) is
  above the idle SM clock;
- power_rose: the same for power draw;
- clock_event_reasons_named: every clock-event reason seen under load decodes to a name, and
  none is a hardware or thermal slowdown (a software power cap is the expected limiter of a
  GEMM at full power and is named, not failed);
- no_unexpected_process: every process NVML lists, idle or under load, was started by the
  harness (its pid is in the document's harness_pids or the load's pids); others are named.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from harness.analysis.clock_events import HARDWARE_SLOWDOWNS
from harness.analysis.units import unavailable_reason
from harness.analysis.verdict import Verdict, parse, recorded

POWER_CAPS = ("sw_power_cap", "hw_power_brake_slowdown")
THERMAL_CAPS = ("sw_thermal_slowdown", "hw_thermal_slowdown")
SKIPPED = {
    "started_at",
    "finished_at",
    "argv",
    "sizing",
    "limitations",
    "load",
    "harness_pids",
    "mode",
    "probe",
    "contract_version",
}


def _devices(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    devices = document.get("devices")
    if not isinstance(devices, list):
        return {}
    return {d["uuid"] if isinstance(d.get("uuid"), str) else f"GPU{d['nvml_index']}": d for d in devices}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a health document as 'a.b.c' -> value; devices keyed by UUID, contracts by name."""
    if isinstance(value, dict) and set(value) == {"unavailable"}:
        return {prefix: value}
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in sorted(value):
            if prefix == "" and key in SKIPPED:
                continue
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else key))
        return out
    if prefix == "devices" and isinstance(value, list):
        return flatten(
            {d.get("uuid") if isinstance(d.get("uuid"), str) else f"GPU{d.get('nvml_index')}": d for d in value},
            "devices",
        )
    if prefix == "contracts" and isinstance(value, list):
        return {f"contracts.{c['name']}.status": c["status"] for c in value}
    return {prefix: value}


def changes(idle: dict[str, Any], active: dict[str, Any]) -> list[dict[str, Any]]:
    """Every leaf whose value differs (a missing leaf is null on its side)."""
    a, b = flatten(idle), flatten(active)
    found = []
    for key in sorted(set(a) | set(b)):
        if json.dumps(a.get(key), sort_keys=True) != json.dumps(b.get(key), sort_keys=True):
            found.append({"field": key, "idle": a.get(key), "active": b.get(key)})
    return found


def load_window_samples(active: dict[str, Any], nvml_index: Any) -> list[dict[str, Any]]:
    """The samples of one device taken while the load ran (the sampler's closing one left out)."""
    load = active.get("load")
    if not isinstance(load, dict) or unavailable_reason(load):
        return []
    start, end = load.get("started_monotonic_s"), load.get("finished_monotonic_s")
    for record in load.get("devices", []):
        if record.get("nvml_index") == nvml_index:
            return [
                s
                for s in record.get("samples", [])
                if isinstance(start, (int, float))
                and isinstance(end, (int, float))
                and start <= s.get("monotonic_s", -1) <= end
            ]
    return []


def _median(values: list[Any]) -> float | None:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(numbers) if numbers else None


def check(name: str, device: str, status: Verdict, evidence: str) -> dict[str, str]:
    """A check as health-diff.json records it (SKIP is the schema's "not-applicable")."""
    return {"name": name, "device": device, "status": recorded(status), "evidence": evidence}


def rose(
    name: str,
    device: str,
    unit: str,
    idle_value: Any,
    samples_values: list[Any],
    snapshot_value: Any,
    ceiling: Any = None,
) -> dict[str, str]:
    """Did a reading rise from idle to under load? Under load = median of load samples."""
    under = _median(samples_values)
    source = f"median of {len([v for v in samples_values if isinstance(v, (int, float))])} load samples"
    if under is None:
        under, source = (
            (snapshot_value, "reading halfway through the load")
            if isinstance(snapshot_value, (int, float))
            else (None, "")
        )
    if not isinstance(idle_value, (int, float)) or under is None:
        return check(
            name,
            device,
            Verdict.FAIL,
            f"cannot compare: idle {idle_value!r}, under load {snapshot_value!r} (no numeric reading)",
        )
    evidence = f"idle {idle_value:g} {unit} -> under load {under:g} {unit} ({source})"
    if under > idle_value:
        return check(name, device, Verdict.PASS, evidence)
    if isinstance(ceiling, (int, float)) and idle_value >= ceiling:
        return check(
            name,
            device,
            Verdict.SKIP,
            evidence + f"; idle was already at its maximum {ceiling:g} {unit}, so there was nothing to rise",
        )
    return check(name, device, Verdict.FAIL, evidence + ": did not rise (did the load reach this device?)")


def reasons_named(device: str, samples: list[dict[str, Any]], snapshot: dict[str, Any]) -> dict[str, str]:
    seen: dict[str, int] = {}
    readings = [s.get("clock_event_reasons") for s in samples] + [snapshot.get("clock_event_reasons", {}).get("names")]
    readable = [r for r in readings if isinstance(r, list)]
    for names in readable:
        for n in names:
            seen[n] = seen.get(n, 0) + 1
    if not readable:
        return check(
            "clock_event_reasons_named", device, Verdict.FAIL, "no clock-event reason could be read under load"
        )
    listing = (
        ", ".join(f"{n} in {c} of {len(readable)} readings" for n, c in sorted(seen.items()))
        or f"none active in {len(readable)} readings"
    )
    caps = [n for n in seen if n in POWER_CAPS + THERMAL_CAPS]
    cap_note = (
        ("; capped by " + ", ".join(f"{n} ({'power' if n in POWER_CAPS else 'thermal'})" for n in sorted(caps)))
        if caps
        else "; no power or thermal cap"
    )
    bad = sorted(n for n in seen if n in HARDWARE_SLOWDOWNS or n.startswith("unknown_"))
    if bad:
        return check(
            "clock_event_reasons_named",
            device,
            Verdict.FAIL,
            listing + cap_note + f"; hardware/thermal slowdown or unknown reason: {', '.join(bad)}",
        )
    return check("clock_event_reasons_named", device, Verdict.PASS, listing + cap_note)


def unexpected_processes(document: dict[str, Any], uuid: Any, samples: list[dict[str, Any]]) -> list[str]:
    own = set(document.get("harness_pids") or [])
    load = document.get("load")
    if isinstance(load, dict) and not unavailable_reason(load):
        own |= set(load.get("pids") or [])
    device = _devices(document).get(uuid, {})
    listings = [device.get("processes")] + [s.get("processes") for s in samples]
    named: dict[int, str] = {}
    for listing in listings:
        for p in listing if isinstance(listing, list) else []:
            if p.get("pid") not in own:
                name = p.get("name")
                name = name if isinstance(name, str) else "name not visible"
                named[p["pid"]] = f"pid {p['pid']} ({name})"
    return [named[pid] for pid in sorted(named)]


def foreign_processes(idle: dict[str, Any], active: dict[str, Any]) -> list[str]:
    """Distinct processes on the GPUs, idle (IDLE, health.json) or under load (ACTIVE, the under-load
    health document and its samples), that the harness did not start: "GPU0 pid 417 (python3)"."""
    found: list[str] = []
    devices = active.get("devices")
    for device in devices if isinstance(devices, list) else []:
        uuid, label = device.get("uuid"), f"GPU{device.get('nvml_index')}"
        samples = load_window_samples(active, device.get("nvml_index"))
        for process in unexpected_processes(idle, uuid, []) + unexpected_processes(active, uuid, samples):
            if f"{label} {process}" not in found:
                found.append(f"{label} {process}")
    return found


def device_checks(idle: dict[str, Any], active: dict[str, Any], uuid: str) -> list[dict[str, str]]:
    before, after = _devices(idle)[uuid], _devices(active)[uuid]
    label = f"GPU{after.get('nvml_index')} {uuid}"
    samples = load_window_samples(active, after.get("nvml_index"))
    checks = [
        rose(
            "clocks_rose",
            label,
            "MHz",
            before.get("clocks", {}).get("sm_current_mhz"),
            [s.get("sm_clock_mhz") for s in samples],
            after.get("clocks", {}).get("sm_current_mhz"),
            before.get("clocks", {}).get("sm_max_mhz"),
        ),
        rose(
            "power_rose",
            label,
            "W",
            before.get("power", {}).get("draw_w"),
            [s.get("power_w") for s in samples],
            after.get("power", {}).get("draw_w"),
        ),
        reasons_named(label, samples, after),
    ]
    foreign = list(
        dict.fromkeys(
            [f"idle: {p}" for p in unexpected_processes(idle, uuid, [])]
            + [f"under load: {p}" for p in unexpected_processes(active, uuid, samples)]
        )
    )
    checks.append(
        check(
            "no_unexpected_process",
            label,
            Verdict.FAIL if foreign else Verdict.PASS,
            ("not started by the harness: " + "; ".join(foreign))
            if foreign
            else "every process listed idle and under load was started by the harness",
        )
    )
    return checks


def diff(idle: dict[str, Any], active: dict[str, Any]) -> dict[str, Any]:
    """The health-diff document: changes, checks, and the names of the failed checks."""
    checks: list[dict[str, str]] = []
    a, b = _devices(idle), _devices(active)
    load = active.get("load")
    if not b:
        why = unavailable_reason(active.get("devices")) or "no device listed"
        checks.append(check("load_ran", "all", Verdict.SKIP, f"no GPU under load: {why}"))
    elif active.get("mode") != "under_load" or not isinstance(load, dict) or unavailable_reason(load):
        checks.append(
            check(
                "load_ran",
                "all",
                Verdict.FAIL,
                "the ACTIVE document has no load record: "
                + (unavailable_reason(load) or f"mode {active.get('mode')!r}"),
            )
        )
    else:
        checks.append(
            check(
                "load_ran",
                "all",
                Verdict.PASS,
                f"{load.get('kind')} for {load.get('requested_s')} s, pids {load.get('pids')}",
            )
        )
    if set(a) != set(b):
        checks.append(check("same_devices", "all", Verdict.FAIL, f"idle devices {sorted(a)} vs under load {sorted(b)}"))
    elif a:
        checks.append(check("same_devices", "all", Verdict.PASS, f"{len(a)} device(s) matched by UUID"))
    if parse(checks[0]["status"]) == Verdict.PASS:
        for uuid in sorted(set(a) & set(b)):
            checks.extend(device_checks(idle, active, uuid))
    failed = sorted({c["name"] for c in checks if parse(c["status"]) == Verdict.FAIL})
    return {
        "kind": "health-diff",
        "idle": _summary(idle),
        "active": _summary(active),
        "changes": changes(idle, active),
        "checks": checks,
        "failed": failed,
        "verdict": Verdict.FAIL if failed else Verdict.PASS,
    }


def _summary(document: dict[str, Any]) -> dict[str, Any]:
    host = document.get("host", {})
    return {
        "started_at": document.get("started_at"),
        "mode": document.get("mode"),
        "hostname": host.get("hostname") if isinstance(host, dict) else None,
    }
