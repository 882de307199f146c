"""Acceptance: the machine's configuration, as raw/health.json read it at idle, against the profile.

Each expectation is the profile's `thresholds.config` (the catalogue's for its SKU, or what
`dossier baseline` saw on the golden unit); one the profile does not state is not judged (SKIP,
saying so). ECC on and the PCIe link's generation and width are `ecc_uncorrectable_zero` and
`pcie_link_at_max_under_load` (an idle link may run slower to save power, so its width and
generation are judged under load), not repeated here.

- config_driver, config_cuda: the NVIDIA driver, and the CUDA version it supports, at or above a
  minimum (versions compared number by number: 580.159.04 > 580.65.06).
- config_persistence: persistence mode on every GPU as expected ("enabled").
- config_mig: MIG mode, current and pending, as expected on every GPU.
- config_power_limit: the enforced power limit equal to the default limit on every GPU.
- config_application_clocks: the application clocks at their defaults (not set by someone) and no
  clock-event reason saying a clock setting holds them.
- config_nvlink: the active NVLink links per GPU are the count the profile states (18 on an H200
  SXM: tests/fixtures/h200x2/health.json); unreadable links (a one-GPU VM: NVML NotSupported) are
  not measured, with NVML's reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harness.analysis.health.contract_facts import gpus, label
from harness.analysis.units import unavailable_reason
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

STEP = "health"


def version_key(text: str) -> tuple[int, ...]:
    """'580.159.04' -> (580, 159, 4); compared number by number."""
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _expected(profile: Profile, key: str) -> Any:
    return (profile.threshold("config") or {}).get(key)


def _health(facts: BundleFacts) -> tuple[dict[str, Any] | None, str]:
    document = facts.document(STEP)
    return (document, "") if document is not None else (None, facts.step_why(STEP))


def _not_stated(name: str, title: str, evidence: str, profile: Profile, key: str) -> Result:
    return Result(
        name,
        title,
        Verdict.INCOMPLETE,
        None,
        None,
        evidence,
        f"the profile for {profile.sku_id} states no config.{key}: not judged",
    )


def _minimum(name: str, title: str, field: str, key: str, what: str) -> Callable[[BundleFacts, Profile], list[Result]]:
    def judge(facts: BundleFacts, profile: Profile) -> list[Result]:
        evidence = f"{facts.output(STEP)} software.{field}"
        wanted = _expected(profile, key)
        if wanted is None:
            return [_not_stated(name, title, evidence, profile, key)]
        threshold = Value(wanted, "version", f"{what} {wanted} or later")
        document, why = _health(facts)
        if document is None:
            return [Result(name, title, Verdict.INCOMPLETE, None, threshold, evidence, why)]
        found = (document.get("software") or {}).get(field)
        if not isinstance(found, str) or not version_key(found):
            reason = unavailable_reason(found) or f"not recorded ({found!r})"
            return [Result(name, title, Verdict.INCOMPLETE, None, threshold, evidence, f"{what}: {reason}")]
        ok = version_key(found) >= version_key(str(wanted))
        return [
            Result(
                name,
                title,
                Verdict.PASS if ok else Verdict.FAIL,
                Value(found, "version", f"{what} {found}"),
                threshold,
                evidence,
                f"{what} {found} is {'at or above' if ok else 'below'} {wanted}",
            )
        ]

    return judge


def _per_gpu(
    name: str,
    title: str,
    key: str,
    fields: str,
    check: Callable[[dict[str, Any], Any], tuple[str | None, str]],
    threshold_text: Callable[[Any], str],
) -> Callable[[BundleFacts, Profile], list[Result]]:
    """A criterion judged on every GPU: CHECK(device, expected) gives (a problem or None, what it saw)."""

    def judge(facts: BundleFacts, profile: Profile) -> list[Result]:
        evidence = f"{facts.output(STEP)} devices[].{fields}"
        wanted = _expected(profile, key)
        if wanted is None:
            return [_not_stated(name, title, evidence, profile, key)]
        threshold = Value(wanted, "state", threshold_text(wanted))
        document, why = _health(facts)
        if document is None:
            return [Result(name, title, Verdict.INCOMPLETE, None, threshold, evidence, why)]
        devices, no_gpu = gpus(document)
        if no_gpu:
            return [Result(name, title, Verdict.INCOMPLETE, None, threshold, evidence, no_gpu)]
        problems, seen, unreadable = [], [], []
        for device in devices:
            problem, saw = check(device, wanted)
            if problem == UNREADABLE:
                unreadable.append(f"{label(device)}: {saw}")
                continue
            seen.append(f"{label(device)} {saw}")
            if problem:
                problems.append(f"{label(device)}: {problem}")
        measured = Value("; ".join(seen + unreadable), "state", "; ".join(seen + unreadable))
        if problems:
            return [Result(name, title, Verdict.FAIL, measured, threshold, evidence, "; ".join(problems))]
        if unreadable:
            return [
                Result(
                    name,
                    title,
                    Verdict.INCOMPLETE,
                    measured,
                    threshold,
                    evidence,
                    "unreadable: " + "; ".join(unreadable),
                )
            ]
        return [Result(name, title, Verdict.PASS, measured, threshold, evidence, "; ".join(seen))]

    return judge


UNREADABLE = "unreadable"


def _mode(field: str | tuple[str, ...], what: str) -> Callable[[dict[str, Any], Any], tuple[str | None, str]]:
    def check(device: dict[str, Any], wanted: Any) -> tuple[str | None, str]:
        modes = device.get("modes") or {}
        values = {f: modes.get(f) for f in (field if isinstance(field, tuple) else (field,))}
        reasons = [r for r in map(unavailable_reason, values.values()) if r]
        if reasons:
            return UNREADABLE, f"{what} unreadable ({'; '.join(reasons)})"
        saw = ", ".join(f"{f.replace('_', ' ')} {v}" for f, v in values.items())
        wrong = [f"{f.replace('_', ' ')} is {v}, expected {wanted}" for f, v in values.items() if v != wanted]
        return ("; ".join(wrong) or None), saw

    return check


def _power_limit(device: dict[str, Any], wanted: Any) -> tuple[str | None, str]:
    power = device.get("power") or {}
    enforced, default = power.get("enforced_limit_w"), power.get("default_limit_w")
    if not all(isinstance(v, (int, float)) for v in (enforced, default)):
        return UNREADABLE, f"enforced {enforced!r}, default {default!r}"
    saw = f"enforced {enforced:g} W, default {default:g} W"
    return (
        None
        if enforced == default
        else f"the enforced power limit {enforced:g} W is not the default {default:g} W (nvidia-smi -pl changed it)"
    ), saw


def _application_clocks(device: dict[str, Any], wanted: Any) -> tuple[str | None, str]:
    clocks = device.get("clocks") or {}
    problems, seen = [], []
    for kind in ("graphics", "memory"):
        app, default = clocks.get(f"applications_{kind}_mhz"), clocks.get(f"default_applications_{kind}_mhz")
        if not all(isinstance(v, int) for v in (app, default)):
            return UNREADABLE, f"{kind} application clock {app!r}, default {default!r}"
        seen.append(f"{kind} {app} MHz (default {default})")
        if app != default:
            problems.append(
                f"{kind} application clock {app} MHz is not its default {default} MHz "
                "(set with nvidia-smi -ac; -rac resets it)"
            )
    reasons = (device.get("clock_event_reasons") or {}).get("names")
    if isinstance(reasons, list) and "applications_clocks_setting" in reasons:
        problems.append("clock-event reason applications_clocks_setting: a clock setting holds the clocks")
    return ("; ".join(problems) or None), ", ".join(seen)


def _nvlink(device: dict[str, Any], wanted: Any) -> tuple[str | None, str]:
    links = device.get("nvlink")
    reason = unavailable_reason(links)
    if reason or not isinstance(links, list):
        return UNREADABLE, f"NVLink unreadable ({reason or links!r})"
    active = [link for link in links if isinstance(link, dict) and link.get("active") is True]
    down = [str(link.get("link")) for link in links if isinstance(link, dict) and link.get("active") is not True]
    saw = f"{len(active)} of {len(links)} NVLink links active"
    if len(active) != wanted:
        return (
            f"{len(active)} active NVLink links, the SKU has {wanted}" + (f" (down: {', '.join(down)})" if down else "")
        ), saw
    return None, saw


DRIVER = Criterion(
    "config_driver",
    "The NVIDIA driver is at or above the profile's minimum",
    (STEP,),
    _minimum(
        "config_driver",
        "The NVIDIA driver is at or above the profile's minimum",
        "driver_version",
        "driver_min",
        "NVIDIA driver",
    ),
)
CUDA = Criterion(
    "config_cuda",
    "The driver's CUDA version is at or above the profile's minimum",
    (STEP,),
    _minimum(
        "config_cuda",
        "The driver's CUDA version is at or above the profile's minimum",
        "cuda_driver_version",
        "cuda_min",
        "CUDA (driver)",
    ),
)
PERSISTENCE = Criterion(
    "config_persistence",
    "Persistence mode is as the profile expects",
    (STEP,),
    _per_gpu(
        "config_persistence",
        "Persistence mode is as the profile expects",
        "persistence",
        "modes.persistence",
        _mode("persistence", "persistence mode"),
        lambda w: f"persistence mode {w} on every GPU",
    ),
)
MIG = Criterion(
    "config_mig",
    "MIG mode is as the profile expects",
    (STEP,),
    _per_gpu(
        "config_mig",
        "MIG mode is as the profile expects",
        "mig",
        "modes.mig_current, modes.mig_pending",
        _mode(("mig_current", "mig_pending"), "MIG mode"),
        lambda w: f"MIG {w}, current and pending, on every GPU",
    ),
)
POWER_LIMIT = Criterion(
    "config_power_limit",
    "The power limit is at its default",
    (STEP,),
    _per_gpu(
        "config_power_limit",
        "The power limit is at its default",
        "power_limit",
        "power.enforced_limit_w, power.default_limit_w",
        _power_limit,
        lambda w: "the enforced power limit equal to the default limit on every GPU",
    ),
)
APPLICATION_CLOCKS = Criterion(
    "config_application_clocks",
    "Application clocks are not locked",
    (STEP,),
    _per_gpu(
        "config_application_clocks",
        "Application clocks are not locked",
        "application_clocks",
        "clocks.applications_*_mhz, clocks.default_applications_*_mhz, clock_event_reasons.names",
        _application_clocks,
        lambda w: "graphics and memory application clocks at their defaults, no clock setting holding them",
    ),
)
NVLINK = Criterion(
    "config_nvlink",
    "Every GPU has the NVLink links the SKU has, all active",
    (STEP,),
    _per_gpu(
        "config_nvlink",
        "Every GPU has the NVLink links the SKU has, all active",
        "nvlink_links_per_gpu",
        "nvlink[].active",
        _nvlink,
        lambda w: f"{w} active NVLink links on every GPU",
    ),
)
CRITERIA = (DRIVER, CUDA, PERSISTENCE, MIG, POWER_LIMIT, APPLICATION_CLOCKS, NVLINK)
