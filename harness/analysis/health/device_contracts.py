"""The health contracts on each device's state (lab step M1T5.1): ECC and row remapping, persistence
mode, the PCIe link, processes the harness did not start, locked clocks, the power limit and
NVLink. Pure functions of health.json's facts; harness.analysis.health.contracts lists them with
the toolchain contracts. Standard library only."""

from __future__ import annotations

from typing import Any

from harness.analysis.health.contract_facts import contract, gpus, label, show, unavailable_reason, verdict
from harness.analysis.verdict import Verdict


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
        ecc = d.get("ecc", {})
        mode = ecc.get("mode_current")
        if unavailable_reason(mode):
            unsupported.append(f"{label(d)}: {unavailable_reason(mode)}")
            continue
        if mode != "enabled":
            problems.append(f"{label(d)} ECC {mode}")
        for key in ("volatile_uncorrected_errors", "aggregate_uncorrected_errors"):
            value = ecc.get(key)
            if unavailable_reason(value):
                problems.append(f"{label(d)} {key} unreadable: {unavailable_reason(value)}")
            elif value:
                problems.append(f"{label(d)} {key} = {value}")
        notes.append(
            f"{label(d)} ECC {mode}, uncorrectable volatile {show(ecc.get('volatile_uncorrected_errors'))}"
            f" / aggregate {show(ecc.get('aggregate_uncorrected_errors'))}"
        )
    return verdict(name, remedy, problems, notes, unsupported, feature="ECC")


def no_pending_or_failed_row_remaps(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_pending_or_failed_row_remaps"
    remedy = "reset the GPU to apply pending row remaps (nvidia-smi -r); a remap failure means an RMA"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes, unsupported = [], [], []
    for d in devices:
        ecc = d.get("ecc", {})
        pending, failure = ecc.get("remapped_rows_pending"), ecc.get("remapped_rows_failure")
        if unavailable_reason(pending) and unavailable_reason(failure):
            unsupported.append(f"{label(d)}: {unavailable_reason(pending)}")
            continue
        if pending is not False:
            problems.append(f"{label(d)} remap pending: {show(pending)}")
        if failure is not False:
            problems.append(f"{label(d)} remap failure: {show(failure)}")
        notes.append(
            f"{label(d)} remapped rows corrected {show(ecc.get('remapped_rows_corrected'))}, "
            f"uncorrected {show(ecc.get('remapped_rows_uncorrected'))}, none pending or failed"
        )
    return verdict(name, remedy, problems, notes, unsupported, feature="row remapping")


def persistence_mode_on(facts: dict[str, Any]) -> dict[str, str]:
    name = "persistence_mode_on"
    remedy = "enable persistence (nvidia-smi -pm 1, or run nvidia-persistenced)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    states = {label(d): d.get("modes", {}).get("persistence") for d in devices}
    off = [f"{k} {show(v)}" for k, v in states.items() if v != "enabled"]
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
        p = d.get("pcie", {})
        cur_gen, max_gen, gpu_max = p.get("current_gen"), p.get("max_gen"), p.get("gpu_max_gen")
        cur_w, max_w = p.get("current_width"), p.get("max_width")
        values = (cur_gen, max_gen, cur_w, max_w)
        if any(unavailable_reason(v) for v in values):
            problems.append(
                f"{label(d)} PCIe link unreadable: " + "; ".join(r for r in map(unavailable_reason, values) if r)
            )
            continue
        text = f"{label(d)} Gen{cur_gen} x{cur_w} of Gen{max_gen} x{max_w}"
        if isinstance(gpu_max, int) and gpu_max > max_gen:
            problems.append(f"{text}: the slot caps the link below the GPU's Gen{gpu_max}")
        elif cur_w < max_w:
            problems.append(text + ": link trained narrower than its maximum")
        elif cur_gen < max_gen and _idle(d) and facts.get("mode") != "under_load":
            idle_downshift.append(text + " while idle (the driver lowers link speed to save power)")
        elif cur_gen < max_gen:
            problems.append(text + " while working")
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


def _idle(device: dict[str, Any]) -> bool:
    names = device.get("clock_event_reasons", {}).get("names")
    return isinstance(names, list) and "gpu_idle" in names


def foreign_processes(facts: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(processes on any device that the harness did not start, devices whose list is unreadable)."""
    devices, _ = gpus(facts)
    own = set(facts.get("harness_pids") or [])
    foreign, unreadable = [], []
    for d in devices:
        listed = d.get("processes")
        if unavailable_reason(listed):
            unreadable.append(f"{label(d)}: {unavailable_reason(listed)}")
            continue
        for p in listed or []:
            if p.get("pid") not in own:
                foreign.append(
                    f"{label(d)} pid {p.get('pid')} ({show(p.get('name'))}, {show(p.get('used_memory_mib'))} MiB)"
                )
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
        for kind in ("graphics", "memory"):
            app, default, top = (
                c.get(f"applications_{kind}_mhz"),
                c.get(f"default_applications_{kind}_mhz"),
                c.get(f"{kind}_max_mhz"),
            )
            if isinstance(app, int) and isinstance(default, int) and app < default:
                problems.append(f"{label(d)} {kind} application clock {app} MHz below its default {default} MHz")
            notes.append(
                f"{label(d)} {kind} application clock {show(app)} MHz (default {show(default)}, max {show(top)})"
            )
        names = d.get("clock_event_reasons", {}).get("names")
        if isinstance(names, list) and "applications_clocks_setting" in names:
            problems.append(
                f"{label(d)} clock-event reason applications_clocks_setting active "
                "(clocks locked or capped by a setting)"
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
        p = d.get("power", {})
        enforced, default = p.get("enforced_limit_w"), p.get("default_limit_w")
        if not all(isinstance(v, (int, float)) for v in (enforced, default)):
            problems.append(f"{label(d)} power limit unreadable: enforced {show(enforced)}, default {show(default)}")
        elif enforced < default:
            problems.append(f"{label(d)} enforced power limit {enforced:g} W below default {default:g} W")
        else:
            notes.append(f"{label(d)} enforced {enforced:g} W = default {default:g} W")
    return verdict(name, remedy, problems, notes)


def nvlink_links_up(facts: dict[str, Any]) -> dict[str, str]:
    name = "nvlink_links_up"
    remedy = "check the NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager) and reset the GPUs"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    if len(devices) < 2:
        return contract(name, Verdict.SKIP, "one GPU: no NVLink peers", remedy)
    down, up, unsupported = [], [], []
    for d in devices:
        links = d["nvlink"]  # every device record has it (harness/probes/devices.py)
        if unavailable_reason(links):
            unsupported.append(f"{label(d)}: {unavailable_reason(links)}")
            continue
        inactive = [link["link"] for link in links if not link.get("active")]
        if inactive:
            down.append(f"{label(d)} links {inactive} inactive")
        up.append(f"{label(d)} {sum(1 for link in links if link.get('active'))}/{len(links)} links active")
    sxm = [label(d) for d in devices if "SXM" in str(d.get("sku", {}).get("form_factor") or "")]
    if down:
        return contract(name, Verdict.FAIL, "; ".join(down), remedy)
    if unsupported and sxm:
        return contract(
            name, Verdict.FAIL, f"SXM devices ({', '.join(sxm)}) report no NVLink: " + "; ".join(unsupported), remedy
        )
    if unsupported and not up:
        return contract(name, Verdict.SKIP, "no NVLink on these devices: " + "; ".join(unsupported), remedy)
    return contract(name, Verdict.PASS, "; ".join(up + unsupported), remedy)
