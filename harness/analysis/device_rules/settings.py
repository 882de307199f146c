"""The rules of what can be set on a GPU, and of who holds it: modes (persistence, MIG), application
clocks, the power limit, hardware slowdowns, processes (harness.analysis.device_rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.analysis import actions
from harness.analysis.actions import Action, Recommendation
from harness.analysis.clock_events import HARDWARE_SLOWDOWNS
from harness.analysis.device_rules.outcome import Item, Outcome, Problem, Unread, problem, unread
from harness.analysis.units import is_number, show, unavailable_reason

SLOWDOWN = Recommendation(
    Action.INSPECT_HARDWARE,
    "clocks.slowdown",
    "the GPU slows itself for heat or power (a hardware or thermal slowdown, the power brake): check its cooling, "
    "power supply and the power brake signal",
)
FOREIGN_PROCESS = Recommendation(
    Action.RERUN_IDLE,
    "processes.foreign",
    "another process used the GPU: what was measured beside it is not the GPU's own; run again once it has ended "
    "(or on an idle node)",
)

MODE_FIXES = {
    "persistence": "nvidia-smi -pm 1, or run nvidia-persistenced",
    "mig_current": "nvidia-smi -mig 0|1, then reset the GPU",
    "mig_pending": "nvidia-smi -mig 0|1, then reset the GPU",
}


def mode(device: dict[str, Any], field: str, expected: str) -> Outcome:
    """modes.FIELD (persistence, mig_current, mig_pending) is EXPECTED (the caller's: health.json's own
    rule, or an acceptance profile's)."""
    value = (device.get("modes") or {}).get(field)
    if unavailable_reason(value):
        return Outcome(f"mode.{field}", (unread(field, value, show(value)),), show(value))
    if value != expected:
        fix = MODE_FIXES.get(field, "set it back")
        why = f"{field.replace('_', ' ')} is {value}, expected {expected}: {fix}"
        return Outcome(f"mode.{field}", (problem(str(value), Action.RECONFIGURE, f"mode.{field}", why),), str(value))
    return Outcome(f"mode.{field}", (), str(value))


def application_clocks(device: dict[str, Any], exact: bool = False) -> Outcome:
    """The application clocks at their defaults (below them, or with EXACT any other value: someone set
    them) and no clock-event reason saying a setting holds the clocks."""
    clocks = device.get("clocks") or {}
    items: list[Item] = []
    rule, why = "clocks.application", "a clock setting holds the GPU's clocks: nvidia-smi -rgc, -rmc, -rac reset them"
    for kind in ("graphics", "memory"):
        app, default = clocks.get(f"applications_{kind}_mhz"), clocks.get(f"default_applications_{kind}_mhz")
        if not (isinstance(app, int) and isinstance(default, int)):
            items.append(
                Unread(f"applications_{kind}_mhz", app, f"{kind} application clock {app!r}, default {default!r}")
            )
        elif app < default:
            items.append(
                problem(
                    f"{kind} application clock {app} MHz below its default {default} MHz", Action.RECONFIGURE, rule, why
                )
            )
        elif exact and app != default:
            items.append(
                problem(
                    f"{kind} application clock {app} MHz is not its default {default} MHz",
                    Action.RECONFIGURE,
                    rule,
                    why,
                )
            )
    names = (device.get("clock_event_reasons") or {}).get("names")
    if isinstance(names, list) and "applications_clocks_setting" in names:
        items.append(
            problem(
                "clock-event reason applications_clocks_setting active (clocks locked or capped by a setting)",
                Action.RECONFIGURE,
                rule,
                why,
            )
        )
    return Outcome("clocks.application", tuple(items))


def power_limit(device: dict[str, Any], exact: bool = False) -> Outcome:
    """The enforced power limit at the default (not below it; with EXACT, not above it either)."""
    power = device.get("power") or {}
    enforced, default = power.get("enforced_limit_w"), power.get("default_limit_w")
    if not (is_number(enforced) and is_number(default)):
        text = f"power limit unreadable: enforced {show(enforced)}, default {show(default)}"
        return Outcome("power.limit", (Unread("enforced_limit_w", enforced, text),))
    seen = f"enforced {enforced:g} W = default {default:g} W"
    if enforced < default or (exact and enforced != default):
        below = "below default" if enforced < default else "is not the default"
        fix = problem(
            f"enforced power limit {enforced:g} W {below} {default:g} W",
            Action.RECONFIGURE,
            "power.limit",
            "someone set the power limit (nvidia-smi -pl): set it back to the default unless the cap is intended",
        )
        return Outcome("power.limit", (fix,), seen)
    return Outcome("power.limit", (), seen)


def hardware_slowdown(device: dict[str, Any]) -> Outcome:
    """No hardware or thermal slowdown holds the clocks down (harness.analysis.clock_events)."""
    reasons = device.get("clock_event_reasons") or {}
    mask = reasons.get("mask")
    if unavailable_reason(mask):
        return Outcome("clocks.slowdown", (unread("clock_event_reasons.mask", mask),))
    slow = [n for n in reasons.get("names") or [] if n in HARDWARE_SLOWDOWNS]
    seen = f"no hardware or thermal slowdown (active: {', '.join(reasons.get('names') or []) or 'none'})"
    if slow:
        held = Problem(f"clocks held down by {', '.join(slow)} (mask {mask:#x})", SLOWDOWN)
        return Outcome("clocks.slowdown", (held,), seen)
    return Outcome("clocks.slowdown", (), seen)


def processes(device: dict[str, Any], own: Sequence[Any] = ()) -> Outcome:
    """No process on the GPU other than OWN (the harness's pids; none for `dossier check`)."""
    listed = device.get("processes")
    if unavailable_reason(listed):
        return Outcome("processes", (unread("processes", listed, str(unavailable_reason(listed))),))
    items: list[Item] = [
        Problem(f"pid {p.get('pid')} ({show(p.get('name'))}, {show(p.get('used_memory_mib'))} MiB)", FOREIGN_PROCESS)
        for p in listed or []
        if p.get("pid") not in set(own)
    ]
    return Outcome("processes", tuple(items))


NOT_READ = (
    "not recorded: the reading was taken before the harness read the driver's recovery action "
    "(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)"
)


def driver_action(device: dict[str, Any]) -> dict[str, Any]:
    """What the driver itself recommends for the GPU (the reading's recovery_action) with its word in
    ours (harness.analysis.actions.from_driver), or why there is none: shown beside our action, never
    in its place."""
    recorded = device.get("recovery_action")
    if recorded is None:
        return {"unavailable": NOT_READ}
    if unavailable_reason(recorded) or not isinstance(recorded, dict):
        return recorded if unavailable_reason(recorded) else {"unavailable": f"recorded as {recorded!r}"}
    word = recorded.get("driver")
    try:
        ours: Any = str(actions.from_driver(word)) if isinstance(word, str) else {"unavailable": show(word)}
    except ValueError as exc:
        ours = {"unavailable": str(exc)}
    return {"code": recorded.get("code"), "driver": word, "action": ours}


def driver_said(devices: Sequence[dict[str, Any]]) -> str:
    """'GPU0 DRAIN_AND_RESET (DRAIN)' or 'GPU0 unavailable (reason)' for each GPU, in one line."""
    parts = []
    for device in devices:
        said = driver_action(device)
        text = (
            f"unavailable ({said['unavailable']})"
            if "unavailable" in said
            else f"{show(said['driver'])} ({show(said['action'])})"
        )
        parts.append(f"GPU{device.get('nvml_index')} {text}")
    return "; ".join(parts)
