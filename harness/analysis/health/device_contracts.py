"""The health contracts on each device's state (lab step M1T5.1): ECC and row remapping, persistence
mode, the PCIe link, processes the harness did not start, locked clocks, the power limit and
NVLink. Pure functions of health.json's facts; harness.analysis.health.contracts lists them with
the toolchain contracts. Standard library only."""

from __future__ import annotations

from typing import Any

from harness.analysis import device_rules
from harness.analysis.health.contract_facts import contract, gpus, label, verdict
from harness.analysis.units import show, unavailable_reason
from harness.analysis.verdict import Verdict


def _said(d: dict[str, Any], outcome: device_rules.Outcome) -> list[str]:
    """Every item of OUTCOME as health.json words it: the device's label, then the rule's text."""
    return [f"{label(d)} {item.text}" for item in outcome.items]


def ecc_enabled_no_uncorrectable(facts: dict[str, Any]) -> dict[str, str]:
    name = "ecc_enabled_no_uncorrectable"
    remedy = (
        "enable ECC (nvidia-smi -e 1, then reboot); a device with uncorrectable errors needs "
        "a reset and, if they recur, an RMA"
    )
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes, unsupported = [], [], []
    for d in devices:
        outcome = device_rules.ecc(d)
        if outcome.unsupported is not None:
            unsupported.append(f"{label(d)}: {unavailable_reason(outcome.unsupported)}")
            continue
        problems += _said(d, outcome)
        notes.append(f"{label(d)} {outcome.seen}")
    return verdict(name, remedy, problems, notes, unsupported, feature="ECC")


def no_pending_or_failed_row_remaps(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_pending_or_failed_row_remaps"
    remedy = "reset the GPU to apply pending row remaps (nvidia-smi -r); a remap failure means an RMA"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes, unsupported = [], [], []
    for d in devices:
        outcome = device_rules.row_remaps(d)
        if outcome.unsupported is not None:
            unsupported.append(f"{label(d)}: {unavailable_reason(outcome.unsupported)}")
            continue
        problems += _said(d, outcome)
        notes.append(f"{label(d)} {outcome.seen}")
    return verdict(name, remedy, problems, notes, unsupported, feature="row remapping")


def persistence_mode_on(facts: dict[str, Any]) -> dict[str, str]:
    name = "persistence_mode_on"
    remedy = "enable persistence (nvidia-smi -pm 1, or run nvidia-persistenced)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    states = {label(d): device_rules.mode(d, "persistence", "enabled") for d in devices}
    off = [f"{k} {o.seen}" for k, o in states.items() if o.items]
    evidence = "; ".join(off) if off else ", ".join(f"{k} enabled" for k in states)
    return contract(name, Verdict.FAIL if off else Verdict.PASS, evidence, remedy)


def pcie_link_at_max(facts: dict[str, Any]) -> dict[str, str]:
    name = "pcie_link_at_max"
    remedy = (
        "reseat the card or move it to a slot wired for its full generation and width; check "
        "BIOS PCIe settings and risers"
    )
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, idle_downshift, notes = [], [], []
    for d in devices:
        outcome = device_rules.pcie_link(d, may_idle=facts.get("mode") != "under_load")
        if outcome.unread:
            problems.append(f"{label(d)} PCIe link unreadable: " + "; ".join(u.text for u in outcome.unread))
            continue
        text = f"{label(d)} {outcome.seen}"
        first = outcome.items[0] if outcome.items else None  # the first thing wrong with the link, as it is said
        if isinstance(first, device_rules.Caveat):
            idle_downshift.append(text + first.text)
        elif first is not None:
            problems.append(text + first.text)
        else:
            notes.append(text)
    if problems:
        return contract(name, Verdict.FAIL, "; ".join(problems), remedy)
    if idle_downshift:
        return contract(
            name,
            Verdict.SKIP,
            "; ".join(idle_downshift + notes)
            + "; only a reading under load can tell: run `dossier health --under-load 5`",
            remedy,
        )
    return contract(name, Verdict.PASS, "; ".join(notes), remedy)


def foreign_processes(facts: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(processes on any device that the harness did not start, devices whose list is unreadable)."""
    devices, _ = gpus(facts)
    own = facts.get("harness_pids") or []
    foreign, unreadable = [], []
    for d in devices:
        outcome = device_rules.processes(d, own)
        unreadable += [f"{label(d)}: {u.text}" for u in outcome.unread]
        foreign += [f"{label(d)} {p.text}" for p in outcome.problems]
    return foreign, unreadable


def no_foreign_process(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_foreign_process"
    remedy = "stop the named processes (or move the run to an idle machine) before measuring"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    foreign, unreadable = foreign_processes(facts)
    if foreign:
        return contract(name, Verdict.FAIL, "not started by the harness: " + "; ".join(foreign), remedy)
    if unreadable and len(unreadable) == len(devices):
        return contract(
            name,
            Verdict.SKIP,
            "NVML cannot list processes here, so this could not be checked: " + "; ".join(unreadable),
            remedy,
        )
    own = sorted(set(facts.get("harness_pids") or []))
    return contract(
        name,
        Verdict.PASS,
        f"no process other than the harness's own (pids {own}) on "
        f"{len(devices) - len(unreadable)} device(s)"
        + (f"; unreadable: {'; '.join(unreadable)}" if unreadable else ""),
        remedy,
    )


def clocks_not_locked_below_max(facts: dict[str, Any]) -> dict[str, str]:
    name = "clocks_not_locked_below_max"
    remedy = "reset clocks: nvidia-smi -rgc (locked GPU clocks), -rmc (locked memory clocks), -rac (application clocks)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        c = d.get("clocks", {})
        problems += [f"{label(d)} {p.text}" for p in device_rules.application_clocks(d).problems]
        for kind in ("graphics", "memory"):
            app, default, top = (
                c.get(f"applications_{kind}_mhz"),
                c.get(f"default_applications_{kind}_mhz"),
                c.get(f"{kind}_max_mhz"),
            )
            notes.append(
                f"{label(d)} {kind} application clock {show(app)} MHz (default {show(default)}, max {show(top)})"
            )
    return verdict(name, remedy, problems, notes)


def power_limit_at_default(facts: dict[str, Any]) -> dict[str, str]:
    name = "power_limit_at_default"
    remedy = "restore the default power limit (nvidia-smi -pl DEFAULT_WATTS) unless the cap is intended"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        outcome = device_rules.power_limit(d)
        problems += _said(d, outcome)
        if not outcome.items:
            notes.append(f"{label(d)} {outcome.seen}")
    return verdict(name, remedy, problems, notes)


def nvlink_links_up(facts: dict[str, Any]) -> dict[str, str]:
    name = "nvlink_links_up"
    remedy = "check the NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager) and reset the GPUs"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    if len(devices) < 2:
        return contract(name, Verdict.SKIP, "one GPU: no NVLink peers", remedy)
    down, up, unsupported, sxm = [], [], [], []
    for d in devices:
        outcome = device_rules.nvlink(d, peers=len(devices) - 1)
        if outcome.unsupported is not None:
            unsupported.append(f"{label(d)}: {unavailable_reason(outcome.unsupported)}")
            sxm += [label(d) for _ in outcome.problems]
            continue
        down += _said(d, outcome)
        up.append(f"{label(d)} {outcome.seen}")
    if down:
        return contract(name, Verdict.FAIL, "; ".join(down), remedy)
    if sxm:
        return contract(
            name, Verdict.FAIL, f"SXM devices ({', '.join(sxm)}) report no NVLink: " + "; ".join(unsupported), remedy
        )
    if unsupported and not up:
        return contract(name, Verdict.SKIP, "no NVLink on these devices: " + "; ".join(unsupported), remedy)
    return contract(name, Verdict.PASS, "; ".join(up + unsupported), remedy)
