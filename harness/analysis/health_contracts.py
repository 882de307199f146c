"""The toolchain contracts (lab step M1T5.1): pure functions of the facts in health.json.

Each contract reads only the collected facts, so the probe, `dossier verify` and the tests
(on facts built from real H200 captures) all judge the same way. A contract is
{"name", "status": a Verdict (pass, fail or not-applicable), "evidence", "remedy"}; "fail" means
it should pass on this host and does not. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.analysis.verdict import Verdict

HARDWARE_SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                      "sw_thermal_slowdown")


def unavailable_reason(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"unavailable"}:
        return str(value["unavailable"])
    return None


def contract(name: str, status: str, evidence: str, remedy: str) -> dict[str, str]:
    return {"name": name, "status": status, "evidence": evidence, "remedy": remedy}


def verdict(name: str, remedy: str, problems: list[str], notes: list[str],
            unsupported: list[str] | None = None, feature: str | None = None) -> dict[str, str]:
    """FAIL naming the problems, else PASS with the notes (and the devices that lack `feature`);
    NOT_APPLICABLE when `feature` is given and no device supports it."""
    unsupported = unsupported or []
    if feature is not None and not problems and not notes:
        return contract(name, Verdict.NOT_APPLICABLE, f"{feature} not supported: " + "; ".join(unsupported), remedy)
    return contract(name, Verdict.FAIL if problems else Verdict.PASS, "; ".join(problems or notes + unsupported), remedy)


def gpus(facts: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The NVML devices, or ([], why there are none)."""
    devices = facts.get("devices")
    reason = unavailable_reason(devices)
    if reason is not None:
        return [], f"no GPU: {reason}"
    if not devices:
        return [], "no GPU: NVML lists no device"
    return devices, None


def label(device: dict[str, Any]) -> str:
    return f"GPU{device.get('nvml_index')}"


def torch_imported(facts: dict[str, Any]) -> bool:
    """Whether the facts are torch's own answers; documents from before the field existed imported torch."""
    return facts.get("torch_imported", True) is not False


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


# --- the contracts ------------------------------------------------------------------------

def driver_supports_torch_cuda_build(facts: dict[str, Any]) -> dict[str, str]:
    name = "driver_supports_torch_cuda_build"
    remedy = ("install a torch wheel built for a CUDA version the driver supports, or upgrade the "
              "NVIDIA driver")
    software = facts.get("software", {})
    devices, no_gpu = gpus(facts)
    build, driver = software.get("torch_cuda_build"), software.get("cuda_driver_version")
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, f"{no_gpu}; torch CUDA build: "
                        f"{unavailable_reason(build) or build}", remedy)
    if unavailable_reason(build):
        return contract(name, Verdict.FAIL, f"{unavailable_reason(build)}, but NVML lists "
                        f"{len(devices)} GPU(s)", remedy)
    if unavailable_reason(driver):
        return contract(name, Verdict.FAIL, f"CUDA driver version unreadable: {unavailable_reason(driver)}", remedy)
    b, d = version_tuple(build), version_tuple(driver)
    evidence = f"driver supports CUDA {driver}; torch {software.get('torch_version')} built for CUDA {build}"
    if d[0] < b[0]:
        return contract(name, Verdict.FAIL, evidence + ": the driver is a major version behind", remedy)
    if d < b:
        evidence += " (runs by CUDA minor-version compatibility: no PTX JIT for newer code)"
    if software.get("torch_cuda_available") is not True:
        reason = unavailable_reason(facts.get("torch_devices")) or "torch.cuda is not available"
        return contract(name, Verdict.FAIL, f"{evidence}; but CUDA does not start: {reason}", remedy)
    started = "CUDA initialised" if torch_imported(facts) else \
        "the CUDA driver initialised (cuInit; torch not imported: --torch checks torch's own start)"
    return contract(name, Verdict.PASS, f"{evidence}; {started}", remedy)


def visible_selection(cvd: str | None, devices: list[dict[str, Any]]) -> tuple[list[int | None], str]:
    """The NVML indices CUDA_VISIBLE_DEVICES selects, in order (None = not resolvable), and a note.

    CUDA stops at the first token that names no device, so later tokens are dropped.
    """
    if cvd is None:
        return [d["nvml_index"] for d in devices], "CUDA_VISIBLE_DEVICES unset: every device visible"
    uuids = {d["uuid"].lower(): d["nvml_index"] for d in devices if isinstance(d.get("uuid"), str)}
    selected: list[int | None] = []
    for token in [t.strip() for t in cvd.split(",") if t.strip()]:
        if token.isdigit():
            if int(token) >= len(devices):
                return selected, f"token {token!r} names no device: CUDA ignores it and the rest"
            selected.append(None)  # CUDA's own (fastest-first) numbering: matched by UUID below
            continue
        matches = [i for u, i in uuids.items() if u.startswith(token.lower())]
        if len(matches) != 1:
            return selected, f"token {token!r} matches {len(matches)} devices: CUDA stops there"
        selected.append(matches[0])
    return selected, f"CUDA_VISIBLE_DEVICES={cvd!r}"


def torch_sees_every_gpu(facts: dict[str, Any]) -> dict[str, str]:
    name = "torch_sees_every_gpu"
    remedy = ("fix CUDA_VISIBLE_DEVICES (or unset it) so it names every device the run should use, "
              "and check that the container was given every GPU (--gpus all)")
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    torch_count = facts.get("torch_device_count")
    if not isinstance(torch_count, int):
        return contract(name, Verdict.FAIL, f"torch sees no CUDA device: {unavailable_reason(torch_count)}", remedy)
    selected, note = visible_selection(facts.get("cuda_visible_devices"), devices)
    mapping = facts.get("device_mapping")
    mapped = [m.get("nvml_index") for m in mapping] if isinstance(mapping, list) else []
    unmatched = [m["torch_index"] for m in mapping or [] if not isinstance(m.get("nvml_index"), int)]
    evidence = (f"NVML lists {len(devices)}, {note}, selecting {len(selected)}; torch sees "
                f"{torch_count}; torch->NVML {mapped}")
    if torch_count != len(selected) or unmatched:
        extra = f"; torch device(s) {unmatched} match no NVML device" if unmatched else ""
        return contract(name, Verdict.FAIL, evidence + extra, remedy)
    wrong = [(t, s, m) for t, (s, m) in enumerate(zip(selected, mapped)) if s is not None and s != m]
    if wrong:
        return contract(name, Verdict.FAIL, evidence + f"; order differs from CUDA_VISIBLE_DEVICES at {wrong}", remedy)
    return contract(name, Verdict.PASS, evidence, remedy)


def nccl_loads(facts: dict[str, Any]) -> dict[str, str]:
    name = "nccl_loads"
    remedy = "install the NCCL that matches the torch wheel (the nvidia-nccl-cu* package) or use its image"
    software = facts.get("software", {})
    _, no_gpu = gpus(facts)
    version, available = software.get("nccl_version"), software.get("nccl_available")
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, f"{no_gpu}; NCCL: {unavailable_reason(version) or version}", remedy)
    if isinstance(version, str) and available is True and torch_imported(facts):
        return contract(name, Verdict.PASS, f"NCCL {version} loaded by torch; torch.distributed NCCL backend available", remedy)
    if isinstance(version, str) and available is True:
        return contract(name, Verdict.PASS, f"NCCL {version} loaded from {software.get('nccl_library')} and answered "
                        "ncclGetVersion (the library torch loads; torch not imported)", remedy)
    return contract(name, Verdict.FAIL, f"NCCL version: {unavailable_reason(version) or version}; "
                    f"NCCL backend available: {unavailable_reason(available) or available}", remedy)


def no_mig_or_compute_mode_block(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_mig_or_compute_mode_block"
    remedy = "disable MIG (nvidia-smi -mig 0, then reset the GPU) and set compute mode Default (nvidia-smi -c 0)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        modes = d.get("modes", {})
        for key in ("mig_current", "mig_pending"):
            if modes.get(key) == "enabled":
                problems.append(f"{label(d)} {key.replace('_', ' ')} enabled")
        compute = modes.get("compute")
        if compute == "prohibited":
            problems.append(f"{label(d)} compute mode prohibited")
        elif unavailable_reason(compute):
            problems.append(f"{label(d)} compute mode unreadable: {unavailable_reason(compute)}")
        elif compute == "exclusive_process":
            notes.append(f"{label(d)} exclusive_process (one process at a time; probes run one by one)")
        notes.append(f"{label(d)} MIG {_show(modes.get('mig_current'))}, compute {_show(compute)}")
    return verdict(name, remedy, problems, notes)


def _show(value: Any) -> str:
    reason = unavailable_reason(value)
    return f"unavailable ({reason})" if reason else str(value)


def ecc_enabled_no_uncorrectable(facts: dict[str, Any]) -> dict[str, str]:
    name = "ecc_enabled_no_uncorrectable"
    remedy = ("enable ECC (nvidia-smi -e 1, then reboot); a device with uncorrectable errors needs "
              "a reset and, if they recur, an RMA")
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
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
        notes.append(f"{label(d)} ECC {mode}, uncorrectable volatile {_show(ecc.get('volatile_uncorrected_errors'))}"
                     f" / aggregate {_show(ecc.get('aggregate_uncorrected_errors'))}")
    return verdict(name, remedy, problems, notes, unsupported, feature="ECC")


def no_pending_or_failed_row_remaps(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_pending_or_failed_row_remaps"
    remedy = "reset the GPU to apply pending row remaps (nvidia-smi -r); a remap failure means an RMA"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    problems, notes, unsupported = [], [], []
    for d in devices:
        ecc = d.get("ecc", {})
        pending, failure = ecc.get("remapped_rows_pending"), ecc.get("remapped_rows_failure")
        if unavailable_reason(pending) and unavailable_reason(failure):
            unsupported.append(f"{label(d)}: {unavailable_reason(pending)}")
            continue
        if pending is not False:
            problems.append(f"{label(d)} remap pending: {_show(pending)}")
        if failure is not False:
            problems.append(f"{label(d)} remap failure: {_show(failure)}")
        notes.append(f"{label(d)} remapped rows corrected {_show(ecc.get('remapped_rows_corrected'))}, "
                     f"uncorrected {_show(ecc.get('remapped_rows_uncorrected'))}, none pending or failed")
    return verdict(name, remedy, problems, notes, unsupported, feature="row remapping")


def persistence_mode_on(facts: dict[str, Any]) -> dict[str, str]:
    name = "persistence_mode_on"
    remedy = "enable persistence (nvidia-smi -pm 1, or run nvidia-persistenced)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    states = {label(d): d.get("modes", {}).get("persistence") for d in devices}
    off = [f"{k} {_show(v)}" for k, v in states.items() if v != "enabled"]
    evidence = "; ".join(off) if off else ", ".join(f"{k} enabled" for k in states)
    return contract(name, Verdict.FAIL if off else Verdict.PASS, evidence, remedy)


def pcie_link_at_max(facts: dict[str, Any]) -> dict[str, str]:
    name = "pcie_link_at_max"
    remedy = ("reseat the card or move it to a slot wired for its full generation and width; check "
              "BIOS PCIe settings and risers")
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    problems, idle_downshift, notes = [], [], []
    for d in devices:
        p = d.get("pcie", {})
        cur_gen, max_gen, gpu_max = p.get("current_gen"), p.get("max_gen"), p.get("gpu_max_gen")
        cur_w, max_w = p.get("current_width"), p.get("max_width")
        values = (cur_gen, max_gen, cur_w, max_w)
        if any(unavailable_reason(v) for v in values):
            problems.append(f"{label(d)} PCIe link unreadable: "
                            + "; ".join(r for r in map(unavailable_reason, values) if r))
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
        return contract(name, Verdict.NOT_APPLICABLE, "; ".join(idle_downshift + notes)
                        + "; only a reading under load can tell: run `dossier health --under-load 5`", remedy)
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
                foreign.append(f"{label(d)} pid {p.get('pid')} ({_show(p.get('name'))}, "
                               f"{_show(p.get('used_memory_mib'))} MiB)")
    return foreign, unreadable


def no_foreign_process(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_foreign_process"
    remedy = "stop the named processes (or move the run to an idle machine) before measuring"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    foreign, unreadable = foreign_processes(facts)
    if foreign:
        return contract(name, Verdict.FAIL, "not started by the harness: " + "; ".join(foreign), remedy)
    if unreadable and len(unreadable) == len(devices):
        return contract(name, Verdict.NOT_APPLICABLE, "NVML cannot list processes here, so this could not be "
                        "checked: " + "; ".join(unreadable), remedy)
    own = sorted(set(facts.get("harness_pids") or []))
    return contract(name, Verdict.PASS, f"no process other than the harness's own (pids {own}) on "
                    f"{len(devices) - len(unreadable)} device(s)"
                    + (f"; unreadable: {'; '.join(unreadable)}" if unreadable else ""), remedy)


def clocks_not_locked_below_max(facts: dict[str, Any]) -> dict[str, str]:
    name = "clocks_not_locked_below_max"
    remedy = ("reset clocks: nvidia-smi -rgc (locked GPU clocks), -rmc (locked memory clocks), "
              "-rac (application clocks)")
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        c = d.get("clocks", {})
        for kind in ("graphics", "memory"):
            app, default, top = (c.get(f"applications_{kind}_mhz"), c.get(f"default_applications_{kind}_mhz"),
                                 c.get(f"{kind}_max_mhz"))
            if isinstance(app, int) and isinstance(default, int) and app < default:
                problems.append(f"{label(d)} {kind} application clock {app} MHz below its default {default} MHz")
            notes.append(f"{label(d)} {kind} application clock {_show(app)} MHz "
                         f"(default {_show(default)}, max {_show(top)})")
        names = d.get("clock_event_reasons", {}).get("names")
        if isinstance(names, list) and "applications_clocks_setting" in names:
            problems.append(f"{label(d)} clock-event reason applications_clocks_setting active "
                            "(clocks locked or capped by a setting)")
    return verdict(name, remedy, problems, notes)


def power_limit_at_default(facts: dict[str, Any]) -> dict[str, str]:
    name = "power_limit_at_default"
    remedy = "restore the default power limit (nvidia-smi -pl DEFAULT_WATTS) unless the cap is intended"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        p = d.get("power", {})
        enforced, default = p.get("enforced_limit_w"), p.get("default_limit_w")
        if not all(isinstance(v, (int, float)) for v in (enforced, default)):
            problems.append(f"{label(d)} power limit unreadable: enforced {_show(enforced)}, default {_show(default)}")
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
        return contract(name, Verdict.NOT_APPLICABLE, no_gpu, remedy)
    if len(devices) < 2:
        return contract(name, Verdict.NOT_APPLICABLE, "one GPU: no NVLink peers", remedy)
    down, up, unsupported = [], [], []
    for d in devices:
        links = d.get("nvlink")
        if unavailable_reason(links):
            unsupported.append(f"{label(d)}: {unavailable_reason(links)}")
            continue
        inactive = [l["link"] for l in links if not l.get("active")]
        if inactive:
            down.append(f"{label(d)} links {inactive} inactive")
        up.append(f"{label(d)} {sum(1 for l in links if l.get('active'))}/{len(links)} links active")
    sxm = [label(d) for d in devices if "SXM" in str(d.get("sku", {}).get("form_factor") or "")]
    if down:
        return contract(name, Verdict.FAIL, "; ".join(down), remedy)
    if unsupported and sxm:
        return contract(name, Verdict.FAIL, f"SXM devices ({', '.join(sxm)}) report no NVLink: "
                        + "; ".join(unsupported), remedy)
    if unsupported and not up:
        return contract(name, Verdict.NOT_APPLICABLE, "no NVLink on these devices: " + "; ".join(unsupported), remedy)
    return contract(name, Verdict.PASS, "; ".join(up + unsupported), remedy)


CONTRACTS: tuple[Callable[[dict[str, Any]], dict[str, str]], ...] = (
    driver_supports_torch_cuda_build,
    torch_sees_every_gpu,
    nccl_loads,
    no_mig_or_compute_mode_block,
    ecc_enabled_no_uncorrectable,
    no_pending_or_failed_row_remaps,
    persistence_mode_on,
    pcie_link_at_max,
    no_foreign_process,
    clocks_not_locked_below_max,
    power_limit_at_default,
    nvlink_links_up,
)
NAMES = tuple(fn.__name__ for fn in CONTRACTS)


def evaluate(facts: dict[str, Any]) -> list[dict[str, str]]:
    """Every contract, in a fixed order, judged on the facts alone."""
    return [fn(facts) for fn in CONTRACTS]
