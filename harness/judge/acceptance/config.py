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

from harness.analysis import actions, device_rules
from harness.analysis.health.contract_facts import gpus, label
from harness.analysis.units import unavailable_reason
from harness.judge.acceptance.criteria import Judging
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
    judging = Judging(name, title, evidence)
    return judging.incomplete(f"the profile for {profile.sku_id} states no config.{key}: not judged")


def _minimum(name: str, title: str, field: str, key: str, what: str) -> Callable[[BundleFacts, Profile], list[Result]]:
    def judge(facts: BundleFacts, profile: Profile) -> list[Result]:
        evidence = f"{facts.output(STEP)} software.{field}"
        wanted = _expected(profile, key)
        if wanted is None:
            return [_not_stated(name, title, evidence, profile, key)]
        threshold = Value(wanted, "version", f"{what} {wanted} or later")
        document, why = _health(facts)
        if document is None:
            return [Judging(name, title, evidence).incomplete(why, threshold=threshold)]
        found = (document.get("software") or {}).get(field)
        if not isinstance(found, str) or not version_key(found):
            reason = unavailable_reason(found) or f"not recorded ({found!r})"
            return [Judging(name, title, evidence).incomplete(f"{what}: {reason}", threshold=threshold)]
        ok = version_key(found) >= version_key(str(wanted))
        return [
            Judging(name, title, evidence).judged(
                ok,
                f"{what} {found} is {'at or above' if ok else 'below'} {wanted}",
                Value(found, "version", f"{what} {found}"),
                threshold,
            )
        ]

    return judge


Check = Callable[[dict[str, Any], Any], tuple[device_rules.Outcome, str]]


def _per_gpu(
    name: str, title: str, key: str, fields: str, check: Check, threshold_text: Callable[[Any], str]
) -> Callable[[BundleFacts, Profile], list[Result]]:
    """A criterion judged on every GPU: CHECK(device, expected) gives the device rule's outcome and
    what it saw (or could not read), in acceptance's words."""

    def judge(facts: BundleFacts, profile: Profile) -> list[Result]:
        judging = Judging(name, title, f"{facts.output(STEP)} devices[].{fields}")
        wanted = _expected(profile, key)
        if wanted is None:
            return [_not_stated(name, title, judging.evidence, profile, key)]
        threshold = Value(wanted, "state", threshold_text(wanted))
        document, why = _health(facts)
        if document is None:
            return [judging.incomplete(why, threshold=threshold)]
        devices, no_gpu = gpus(document)
        if no_gpu:
            return [judging.incomplete(no_gpu, threshold=threshold)]
        problems: list[device_rules.Problem] = []
        wrong, seen, unreadable = [], [], []
        for device in devices:
            outcome, saw = check(device, wanted)
            if outcome.unread or outcome.unsupported is not None:
                unreadable.append(f"{label(device)}: {saw}")
                continue
            seen.append(f"{label(device)} {saw}")
            if outcome.problems:
                problems += outcome.problems
                wrong.append(f"{label(device)}: " + "; ".join(p.text for p in outcome.problems))
        measured = Value("; ".join(seen + unreadable), "state", "; ".join(seen + unreadable))
        if wrong:
            action = actions.overall(p.recommendation for p in problems)
            return [judging.failed("; ".join(wrong), measured, threshold, action)]
        if unreadable:
            return [judging.incomplete("unreadable: " + "; ".join(unreadable), measured, threshold)]
        return [judging.passed("; ".join(seen), measured, threshold)]

    return judge


def _mode(fields: tuple[str, ...], what: str) -> Check:
    def check(device: dict[str, Any], wanted: Any) -> tuple[device_rules.Outcome, str]:
        judged = {f: device_rules.mode(device, f, wanted) for f in fields}
        reasons = [u.reason for o in judged.values() for u in o.unread]
        outcome = device_rules.Outcome(
            "mode",
            tuple(
                device_rules.Problem(f"{f.replace('_', ' ')} is {p.text}, expected {wanted}", p.recommendation)
                if isinstance(p, device_rules.Problem)
                else p
                for f, o in judged.items()
                for p in o.items
            ),
        )
        if reasons:
            return outcome, f"{what} unreadable ({'; '.join(reasons)})"
        return outcome, ", ".join(f"{f.replace('_', ' ')} {o.seen}" for f, o in judged.items())

    return check


def _power_limit(device: dict[str, Any], wanted: Any) -> tuple[device_rules.Outcome, str]:
    power = device.get("power") or {}
    enforced, default = power.get("enforced_limit_w"), power.get("default_limit_w")
    outcome = device_rules.power_limit(device, exact=True)
    if outcome.unread:
        return outcome, f"enforced {enforced!r}, default {default!r}"
    return outcome, f"enforced {enforced:g} W, default {default:g} W"


def _application_clocks(device: dict[str, Any], wanted: Any) -> tuple[device_rules.Outcome, str]:
    clocks = device.get("clocks") or {}
    outcome = device_rules.application_clocks(device, exact=True)
    if outcome.unread:
        return outcome, outcome.unread[0].text
    kinds = ("graphics", "memory")
    return outcome, ", ".join(
        f"{k} {clocks.get(f'applications_{k}_mhz')} MHz (default {clocks.get(f'default_applications_{k}_mhz')})"
        for k in kinds
    )


def _nvlink(device: dict[str, Any], wanted: Any) -> tuple[device_rules.Outcome, str]:
    outcome = device_rules.nvlink(device, peers=0, expected_active=wanted)
    if outcome.unsupported is not None:
        return outcome, f"NVLink unreadable ({unavailable_reason(outcome.unsupported)})"
    links = device.get("nvlink") or []
    return outcome, f"{sum(1 for link in links if link.get('active'))} of {len(links)} NVLink links active"


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
        _mode(("persistence",), "persistence mode"),
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
