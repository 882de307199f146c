"""What to do after each failed criterion: the lab's (report.md, the end of `dossier run`) and
acceptance's (`dossier accept`, `dossier fleet collect`), one table of rules (issue 39).

A criterion that knows its action sets it on its Result (the device rules' ECC, row-remap, PCIe and
configuration findings: harness.analysis.device_rules); every other FAIL gets the action of the first
rule here that matches its name, with the rule's id and why. The rules read what the bundle records
beside the failed figure:

- the disturbance: processes the harness did not start on the GPUs, idle or under load (the health
  documents), and the host contention the bundle records (`host_contention`, issue 35's evidence);
- the settings found changed on the GPUs (a lowered power limit, set application clocks: the
  device rules on the health documents).

A rate below its bar is RERUN_IDLE when a disturbance is recorded (a co-tenant's slowdown is not the
GPU's), RECONFIGURE when a changed setting explains it, and INSPECT_HARDWARE when nothing recorded
does: `rate`, the one rule for every rate criterion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.analysis import actions, device_rules
from harness.analysis import contention as analysis_contention
from harness.analysis.actions import Action, Recommendation
from harness.analysis.bandwidth import figures as bandwidth_rules
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.health import diff
from harness.analysis.stress.view import StressFigures
from harness.analysis.transfer.view import TransferFigures
from harness.analysis.verdict import StepStatus, Verdict
from harness.judge import contention
from harness.judge.action_words import (
    CLOCKS_STUCK,
    CORRUPTION,
    LINK_INCONSISTENT,
    LINK_UNREAD,
    MEMORY,
    NOT_JUDGED,
    REMEASURE,
    ROOFLINE_UNEXPLAINED,
    SETTING,
    SHORT_STRESS,
    SOFTWARE,
    STEP_FAILED,
    STRESS_ERRORS,
    UNRULED,
    UNSTEADY,
    WRONG_SKU,
)
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts


@dataclass(frozen=True)
class Conditions:
    """What the bundle records beside its figures that can explain a failed one."""

    disturbed: tuple[str, ...] = ()  # what else ran: foreign processes, host contention
    settings: tuple[str, ...] = ()  # settings found changed on the GPUs


def host_contention(facts: BundleFacts) -> list[str]:
    """The host contention the bundle records while its steps ran, in words (host-contention.json's
    busy windows, harness.judge.contention): a rate measured beside other work is rerun idle first."""
    found = contention.windows(facts) or {}
    return [
        f"host busy during the {step} step: {contention.short(figures)}"
        for step, figures in found.items()
        if figures["state"] == analysis_contention.BUSY
    ]


def _document(facts: BundleFacts, step: str) -> dict[str, Any]:
    """STEP's document, or {} (not there, or not an object: nothing to read beside a figure)."""
    document = facts.document(step)
    return document if isinstance(document, dict) else {}


def conditions(facts: BundleFacts) -> Conditions:
    idle, active = _document(facts, "health"), _document(facts, "health-load")
    foreign = diff.foreign_processes(idle, active) if active else []
    if not active and idle:
        foreign = [f"GPU{d.get('nvml_index')} {p.text}" for d in _devices(idle) for p in _foreign(idle, d)]
    settings = [
        f"{step} GPU{d.get('nvml_index')} {p.text}"
        for step, document in (("health", idle), ("health-load", active))
        for d in _devices(document)
        for rule in (device_rules.power_limit, device_rules.application_clocks)
        for p in rule(d).problems
    ]
    return Conditions(tuple(foreign + host_contention(facts)), tuple(dict.fromkeys(settings)))


def _devices(document: dict[str, Any]) -> list[dict[str, Any]]:
    devices = document.get("devices")
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _foreign(document: dict[str, Any], device: dict[str, Any]) -> list[device_rules.Problem]:
    return device_rules.processes(device, document.get("harness_pids") or []).problems


# --- the rules ---------------------------------------------------------------------------------


def rate(what: str, c: Conditions) -> Recommendation:
    """The one rule for a rate below its bar (a known-good share, the node's median, the roofline)."""
    if c.disturbed:
        return Recommendation(
            Action.RERUN_IDLE,
            "rate.disturbed",
            f"{what} below its bar with {'; '.join(c.disturbed)} recorded beside it: a co-tenant's slowdown, not "
            "the GPU's; run it again on an idle node (dossier retest) before judging the hardware",
        )
    if c.settings:
        return Recommendation(
            Action.RECONFIGURE,
            "rate.misconfigured",
            f"{what} below its bar with {'; '.join(c.settings)}: put the setting back, then measure again",
        )
    return Recommendation(
        Action.INSPECT_HARDWARE,
        "rate.low",
        f"{what} below its bar on a node with nothing else running and its settings at their defaults: the "
        "hardware is slower than it should be",
    )


P2P_BROKEN = Recommendation(
    Action.RESET_GPU,
    "p2p.broken",
    "peer access fails where the topology reports NVLink: check the fabric manager and reset the GPUs; if it "
    "stays broken, the IOMMU or ACS settings or the hardware",
)

Rule = Callable[[Result, BundleFacts, Conditions], Recommendation]


def _fixed(recommendation: Recommendation) -> Rule:
    return lambda result, facts, c: recommendation


def _rate(what: str) -> Rule:
    return lambda result, facts, c: rate(what, c)


def _clocks(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    return rate("the clocks under load", c) if c.disturbed else CLOCKS_STUCK


def _stress_failures(facts: BundleFacts) -> set[str]:
    """The names of the stress checks that failed on any GPU (harness.analysis.stress's headlines)."""
    stress = facts.viewed("stress", StressFigures.from_headlines)
    devices = stress.devices if stress is not None else ()
    return {c.name for d in devices for c in d.checks if c.status.lower() == Verdict.FAIL}


STRESS_CHECKS = {  # a failed stress check -> what to do
    "result_check": CORRUPTION,
    "memory_test": CORRUPTION,
    "nvml_events": STRESS_ERRORS,
    "ecc_and_row_remap": STRESS_ERRORS,
    "clock_event_reasons": device_rules.SLOWDOWN,
}


def _stress(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    found = [STRESS_CHECKS[name] for name in sorted(_stress_failures(facts)) if name in STRESS_CHECKS]
    return actions.overall(found) if found else rate("the stress run", c)


def _transfer(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    """A degraded host link as NVML and the copies show it, broken P2P, or a slow pair."""
    heads = facts.viewed("transfer", TransferFigures.from_headlines)
    found = []
    for check in heads.link_checks if heads is not None else ():
        reasons = " ".join(check.reasons)
        if check.status == "inconsistent":
            found.append(LINK_INCONSISTENT)
        elif check.status == "degraded":
            if "trained below its width" in reasons:
                found.append(device_rules.NARROWER)
            if "trained below its generation" in reasons:
                found.append(device_rules.GENERATION_LOW)
            if "slower than the reported link" in reasons:
                found.append(rate("a host link's copies", c))
    for check in heads.p2p_checks if heads is not None else ():
        if check.status == "broken_p2p":
            found.append(P2P_BROKEN)
        elif check.status == "degraded":
            found.append(rate("a GPU pair's peer copies", c))
    return actions.overall(found) if found else rate("the transfer rates", c)


HEALTH_CONTRACT_RULES: dict[str, Callable[[dict[str, Any], dict[str, Any], int], list[device_rules.Problem]]] = {
    "ecc_enabled_no_uncorrectable": lambda doc, d, n: device_rules.ecc(d).problems,
    "no_pending_or_failed_row_remaps": lambda doc, d, n: device_rules.row_remaps(d).problems,
    "persistence_mode_on": lambda doc, d, n: device_rules.mode(d, "persistence", "enabled").problems,
    "pcie_link_at_max": lambda doc, d, n: device_rules.pcie_link(d, doc.get("mode") != "under_load").problems,
    "no_foreign_process": lambda doc, d, n: _foreign(doc, d),
    "clocks_not_locked_below_max": lambda doc, d, n: device_rules.application_clocks(d).problems,
    "power_limit_at_default": lambda doc, d, n: device_rules.power_limit(d).problems,
    "nvlink_links_up": lambda doc, d, n: device_rules.nvlink(d, n - 1).problems if n > 1 else [],
}


def _health(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    """The failed health contracts: a device contract's own rule, a toolchain contract RECONFIGURE."""
    document = _document(facts, "health")
    failed = [
        x.get("name") for x in document.get("contracts") or [] if isinstance(x, dict) and x.get("status") == "fail"
    ]
    devices = _devices(document)
    found = [
        p.recommendation
        for name in failed
        for d in devices
        for p in HEALTH_CONTRACT_RULES.get(str(name), lambda doc, d, n: [])(document, d, len(devices))
    ]
    if any(name not in HEALTH_CONTRACT_RULES for name in failed):
        found.append(SOFTWARE)
    return actions.overall(found) if found else SOFTWARE


def _idle_load(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    document = _document(facts, "health-diff")
    failed = {x.get("name") for x in document.get("checks") or [] if isinstance(x, dict) and x.get("status") == "fail"}
    found = [device_rules.FOREIGN_PROCESS] if "no_unexpected_process" in failed else []
    if failed & {"clocks_rose", "power_rose"}:
        found.append(_clocks(result, facts, c))
    return actions.overall(found) if found else REMEASURE


def _roofline(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    return rate("a GEMM rate", c) if c.disturbed or c.settings else ROOFLINE_UNEXPLAINED


def _bandwidth(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    bandwidth = facts.viewed("bandwidth", BandwidthFigures.from_headlines)
    spread = bandwidth.repeat_spread if bandwidth is not None else None
    if not (spread is not None and bandwidth_rules.repeats_agree(spread)):
        return UNSTEADY
    return rate("the memory bandwidth", c)


def _known_good(result: Result, facts: BundleFacts, c: Conditions) -> Recommendation:
    """The rates against the known-good (report.md's `known-good`): the most severe action of its rates that
    failed, each by acceptance's own rule for it; the one rate rule when none is named."""
    failed = [recommendation(r, facts, c) for r in result.rows if r.status == Verdict.FAIL]
    return actions.overall(failed) if failed else rate("a rate against the known-good", c)


# Criterion name -> its rule, the first match wins (acceptance's names, then the lab's). The criteria the
# device rules judge name their own action; these are for a FAIL the rules give no problem for.
RULES: tuple[tuple[str, Rule], ...] = (
    (r"sku_matches_profile", _fixed(WRONG_SKU)),
    (r"config_(driver|cuda)", _fixed(SOFTWARE)),
    (r"config_(persistence|mig|power_limit|application_clocks)", _fixed(SETTING)),
    (r"config_nvlink", _fixed(device_rules.NVLINK_DOWN)),
    (r"ecc_uncorrectable_zero|row_remaps_clean", _fixed(MEMORY)),
    (r"pcie_link_at_max_under_load", _fixed(LINK_UNREAD)),
    (r"repeat_spread", _fixed(UNSTEADY)),
    (r"bandwidth_plateau", _rate("the memory bandwidth")),
    (r"gemm_.+", _rate("the GEMM rate")),
    (r"allreduce_busbw", _rate("the all-reduce bus bandwidth")),
    (r"stress_sustained_.+", _rate("the sustained GEMM rate")),
    (r"stress_power_target_reached", _rate("the power reached under load")),
    (r"stress_duration", _fixed(SHORT_STRESS)),
    (r"stress_(result_mismatches|memory_errors)_zero|stress_digests_agree|stress_digest_expected", _fixed(CORRUPTION)),
    (r"precision_digests_expected", _fixed(CORRUPTION)),
    (r"stress_no_new_errors", _fixed(STRESS_ERRORS)),
    (r"stress_no_slowdown_events", _fixed(device_rules.SLOWDOWN)),
    (r"transfer_(links|p2p)", _transfer),
    (r"transfer_.+", _rate("the transfer rate")),
    (r"gpu_vs_node_.+", _rate("one GPU against the node's others")),
    (r"clocks_rise_under_load", _clocks),
    (r"no_unexpected_process", _fixed(device_rules.FOREIGN_PROCESS)),
    (r"known-good", _known_good),
    (r"health", _health),
    (r"bandwidth", _bandwidth),
    (r"roofline", _roofline),
    (r"stress", _stress),
    (r"transfer", _transfer),
    (r"idle-load", _idle_load),
    (r"precision|allreduce", _fixed(REMEASURE)),
)


def recommendation(result: Result, facts: BundleFacts, c: Conditions, steps: Sequence[str] = ()) -> Recommendation:
    """The action after a failed RESULT: a failed step's first (of its own steps and STEPS, its
    criterion's), then the rule its name matches."""
    if result.why.startswith("could not be judged from this bundle's data"):
        return NOT_JUDGED
    if any(facts.status(step) == StepStatus.FAILED for step in (*result.steps, *steps)):
        return STEP_FAILED
    for pattern, rule in RULES:
        if re.fullmatch(pattern, result.name):
            try:
                return rule(result, facts, c)
            except Exception as exc:  # noqa: BLE001 - a bundle's odd data: the action says so, never a traceback
                return Recommendation(
                    Action.RERUN_IDLE,
                    "criterion.unreadable",
                    f"the rule for {result.name} could not read this bundle's data ({type(exc).__name__}: {exc}): "
                    "make the dossier again",
                )
    return UNRULED


def attach(results: Iterable[Result], facts: BundleFacts, criteria: Iterable[Criterion] = ()) -> list[Result]:
    """RESULTS with an action on every FAIL: its own where the criterion set one, else the table's
    (CRITERIA: those judged, whose steps name what a failed one read)."""
    judged = list(results)
    if not any(r.status == Verdict.FAIL and _missing(r) for r in judged):
        return judged
    c = conditions(facts)
    read = {criterion.name: criterion.steps for criterion in criteria}
    return [
        replace(r, action=recommendation(r, facts, c, read.get(r.name, ())))
        if r.status == Verdict.FAIL and _missing(r)
        else r
        for r in judged
    ]


def _missing(result: Result) -> bool:
    return result.action is None or result.action.action == Action.NONE


def overall(results: Sequence[Result]) -> Recommendation:
    """The most severe action of the failed results (the first of equals)."""
    return actions.overall(r.action for r in results if r.status == Verdict.FAIL)
