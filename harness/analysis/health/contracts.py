"""The health contracts (lab step M1T5.1): pure functions of the facts in health.json. The
toolchain's are here; each device's state is harness.analysis.health.device_contracts'; CONTRACTS lists
them all in their fixed order.

Each contract reads only the collected facts, so the probe, `dossier verify` and the tests
(on facts built from real H200 captures) all judge the same way. A contract is
{"name", "status": a Verdict as health.json records it (pass, fail, or not-applicable for SKIP),
"evidence", "remedy"}; "fail" means it should pass on this host and does not. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.analysis import device_rules
from harness.analysis.health.contract_facts import contract, gpus, label, torch_imported, verdict, version_tuple
from harness.analysis.health.device_contracts import (
    clocks_not_locked_below_max,
    ecc_enabled_no_uncorrectable,
    no_foreign_process,
    no_pending_or_failed_row_remaps,
    nvlink_links_up,
    pcie_link_at_max,
    persistence_mode_on,
    power_limit_at_default,
)
from harness.analysis.units import show, unavailable_reason
from harness.analysis.verdict import Verdict

# --- the toolchain contracts --------------------------------------------------------------


def driver_supports_torch_cuda_build(facts: dict[str, Any]) -> dict[str, str]:
    name = "driver_supports_torch_cuda_build"
    remedy = "install a torch wheel built for a CUDA version the driver supports, or upgrade the NVIDIA driver"
    software = facts.get("software", {})
    devices, no_gpu = gpus(facts)
    build, driver = software.get("torch_cuda_build"), software.get("cuda_driver_version")
    if no_gpu:
        return contract(name, Verdict.SKIP, f"{no_gpu}; torch CUDA build: {unavailable_reason(build) or build}", remedy)
    if unavailable_reason(build):
        return contract(
            name, Verdict.FAIL, f"{unavailable_reason(build)}, but NVML lists {len(devices)} GPU(s)", remedy
        )
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
    started = (
        "CUDA initialised"
        if torch_imported(facts)
        else "the CUDA driver initialised (cuInit; torch not imported: --torch checks torch's own start)"
    )
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
    remedy = (
        "fix CUDA_VISIBLE_DEVICES (or unset it) so it names every device the run should use, "
        "and check that the container was given every GPU (--gpus all)"
    )
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    torch_count = facts.get("torch_device_count")
    if not isinstance(torch_count, int):
        return contract(name, Verdict.FAIL, f"torch sees no CUDA device: {unavailable_reason(torch_count)}", remedy)
    selected, note = visible_selection(facts.get("cuda_visible_devices"), devices)
    mapping = facts.get("device_mapping")
    mapped = [m.get("nvml_index") for m in mapping] if isinstance(mapping, list) else []
    unmatched = (
        [m["torch_index"] for m in mapping if not isinstance(m.get("nvml_index"), int)]
        if isinstance(mapping, list)
        else []
    )
    evidence = (
        f"NVML lists {len(devices)}, {note}, selecting {len(selected)}; torch sees {torch_count}; torch->NVML {mapped}"
    )
    if torch_count and not isinstance(mapping, list):  # the order cannot be checked: fail closed, never a silent pass
        return contract(
            name,
            Verdict.FAIL,
            evidence + f"; the torch->NVML mapping could not be read: {unavailable_reason(mapping) or 'not recorded'}",
            remedy,
        )
    if torch_count != len(selected) or unmatched:
        extra = f"; torch device(s) {unmatched} match no NVML device" if unmatched else ""
        return contract(name, Verdict.FAIL, evidence + extra, remedy)
    wrong = [(t, s, m) for t, (s, m) in enumerate(zip(selected, mapped, strict=False)) if s is not None and s != m]
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
        return contract(name, Verdict.SKIP, f"{no_gpu}; NCCL: {unavailable_reason(version) or version}", remedy)
    if isinstance(version, str) and available is True and torch_imported(facts):
        return contract(
            name, Verdict.PASS, f"NCCL {version} loaded by torch; torch.distributed NCCL backend available", remedy
        )
    if isinstance(version, str) and available is True:
        return contract(
            name,
            Verdict.PASS,
            f"NCCL {version} loaded from {software.get('nccl_library')} and answered "
            "ncclGetVersion (the library torch loads; torch not imported)",
            remedy,
        )
    return contract(
        name,
        Verdict.FAIL,
        f"NCCL version: {unavailable_reason(version) or version}; "
        f"NCCL backend available: {unavailable_reason(available) or available}",
        remedy,
    )


def no_mig_or_compute_mode_block(facts: dict[str, Any]) -> dict[str, str]:
    name = "no_mig_or_compute_mode_block"
    remedy = "disable MIG (nvidia-smi -mig 0, then reset the GPU) and set compute mode Default (nvidia-smi -c 0)"
    devices, no_gpu = gpus(facts)
    if no_gpu:
        return contract(name, Verdict.SKIP, no_gpu, remedy)
    problems, notes = [], []
    for d in devices:
        modes = d.get("modes", {})
        for key in ("mig_current", "mig_pending"):
            problems += [
                f"{label(d)} {key.replace('_', ' ')} {p.text}" for p in device_rules.mode(d, key, "disabled").problems
            ]
        compute = modes.get("compute")
        if compute == "prohibited":
            problems.append(f"{label(d)} compute mode prohibited")
        elif unavailable_reason(compute):
            problems.append(f"{label(d)} compute mode unreadable: {unavailable_reason(compute)}")
        elif compute == "exclusive_process":
            notes.append(f"{label(d)} exclusive_process (one process at a time; probes run one by one)")
        notes.append(f"{label(d)} MIG {show(modes.get('mig_current'))}, compute {show(compute)}")
    return verdict(name, remedy, problems, notes)


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
