"""`dossier check`'s judgement: pure functions of a node reading (harness/probes/check/) and
what the node should have (harness.check.expectation), so a live reading and a replayed one are
judged alike.

Each check gives one Finding in the one verdict vocabulary (harness/analysis/verdict.py): PASS,
FAIL, INCOMPLETE (it should be judged and could not be: a field unreadable for a reason other than
"not supported", a kernel log that cannot be read) or SKIP (nothing to judge here, with why). A
field NVML answers NotSupported is SKIP for that GPU; GpuIsLost is FAIL; any other unreadable
field is INCOMPLETE: what could not be read is never passed. The node's verdict is the set's
(harness.analysis.verdict.overall): any FAIL, else any INCOMPLETE, else any WARN, else PASS;
nothing judged is INCOMPLETE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from harness import catalogue
from harness.analysis import actions
from harness.analysis.actions import Action, Recommendation
from harness.analysis.units import unavailable_reason
from harness.analysis.verdict import Verdict
from harness.check import gpu_checks, xid
from harness.check.expectation import Expectation, version_tuple
from harness.check.findings import Finding, Node, Part, per_gpu

# What to do after each node-level finding (the GPUs' own are harness.analysis.device_rules').
DRIVER_LOST_GPU = Recommendation(
    Action.REBOOT_NODE,
    "gpu_count.driver_lost",
    "the PCI bus lists a GPU the driver does not give: a GPU that fell off (XID 79) comes back only with a "
    "node reboot (NVIDIA's Xid catalogue: RESTART_BM); if it is lost again, inspect the hardware",
)
GPU_MISSING = Recommendation(
    Action.INSPECT_HARDWARE,
    "gpu_count.missing",
    "the node has not the GPUs it should have on its PCI bus: a card not seated, not powered or dead",
)
DRIVER_DOWN = Recommendation(
    Action.REBOOT_NODE,
    "driver.not_loaded",
    "the NVIDIA driver does not answer or is not loaded: a reboot loads the installed driver (reinstall it if "
    "it still does not load)",
)
DRIVER_MISMATCH = Recommendation(
    Action.REBOOT_NODE,
    "driver.mismatch",
    "the loaded kernel module is not the user-space driver (a driver update without a reboot): reboot, or "
    "reload the module",
)
DRIVER_OLD = Recommendation(
    Action.RECONFIGURE, "driver.below_minimum", "install a driver at or above the minimum the node must have"
)
WRONG_SKU = Recommendation(
    Action.INSPECT_HARDWARE,
    "gpu_sku.wrong",
    "the GPU is not the SKU this node should have: a matter for whoever supplied the hardware",
)

# --- the checks ---------------------------------------------------------------------------------


def gpu_count(node: Node) -> Finding:
    name, expected, pci = "gpu_count", node.expected_gpus, node.pci_count
    source = (
        "--expect-gpus"
        if node.expect.gpus is not None
        else f"at least one: {node.expect.sku} is expected ({node.expect.sku_from})"
        if pci == 0 and node.expect.sku
        else "every NVIDIA GPU on the PCI bus"
    )
    on_bus = (
        f"the PCI bus lists {pci}"
        if pci is not None
        else f"the PCI bus is unreadable ({unavailable_reason(node.reading['pci_gpus'])})"
    )
    if expected is None:
        return Finding(name, Verdict.INCOMPLETE, f"no --expect-gpus and {on_bus}")
    devices = node.devices
    if devices is not None:
        if len(devices) == expected:
            return Finding(name, Verdict.PASS, f"{len(devices)} GPU(s), as expected ({source}); {on_bus}")
        lost = pci is not None and pci > len(devices)
        return Finding(
            name,
            Verdict.FAIL,
            f"expected {expected} GPU(s) ({source}), NVML lists {len(devices)}; {on_bus}",
            DRIVER_LOST_GPU if lost else GPU_MISSING,
        )
    why = node.why_no_devices()
    if pci is not None and pci == expected == 0:
        return Finding(name, Verdict.PASS, f"no GPU, as expected: the PCI bus lists no NVIDIA GPU (NVML: {why})")
    if pci is not None and pci != expected:
        return Finding(name, Verdict.FAIL, f"expected {expected} GPU(s) ({source}), {on_bus}; NVML: {why}", GPU_MISSING)
    return Finding(name, Verdict.INCOMPLETE, f"cannot count usable GPUs: NVML: {why} ({on_bus})")


def driver(node: Node) -> Finding:
    name = "driver"
    if node.gpu_free:
        return Finding(name, Verdict.SKIP, "no GPU on this node, and none expected")
    module, nvml = node.reading["kernel_module"], node.reading["nvml"]
    loaded = module.get("version") if isinstance(module, dict) and "banner" in module else None
    module_text = (
        f"kernel module {loaded}"
        if isinstance(loaded, str)
        else f"kernel module loaded, version unreadable ({module['banner']!r})"
        if loaded is not None
        else f"kernel module: {unavailable_reason(module)}"
    )
    nvml_why = unavailable_reason(nvml)
    if nvml_why is not None:
        module_missing = unavailable_reason(module) is not None and bool(node.pci_count)
        if "RmVersionMismatch" in nvml_why or module_missing:
            return Finding(
                name, Verdict.FAIL, f"the driver does not answer: NVML: {nvml_why}; {module_text}", DRIVER_DOWN
            )
        return Finding(name, Verdict.INCOMPLETE, f"NVML: {nvml_why}; {module_text}")
    version = nvml["driver_version"]
    if unavailable_reason(version):
        return Finding(name, Verdict.INCOMPLETE, f"driver version unreadable: {unavailable_reason(version)}")
    text = f"driver {version} (NVML), {module_text}"
    if isinstance(loaded, str) and loaded != version:
        return Finding(
            name,
            Verdict.FAIL,
            f"{text}: the kernel module and the user-space driver differ (reboot, "
            "or reload the module, after a driver update)",
            DRIVER_MISMATCH,
        )
    if node.expect.min_driver is None:
        return Finding(name, Verdict.PASS, text)
    try:
        below = version_tuple(version) < version_tuple(node.expect.min_driver)
    except ValueError:
        return Finding(name, Verdict.INCOMPLETE, f"NVML's driver version {version!r} is not numbers")
    if below:
        return Finding(name, Verdict.FAIL, f"{text}: below the minimum {node.expect.min_driver}", DRIVER_OLD)
    return Finding(name, Verdict.PASS, f"{text}, at least {node.expect.min_driver}")


def gpu_sku(node: Node) -> Finding:
    expected = node.expect.sku
    if expected is None:
        return Finding("gpu_sku", Verdict.SKIP, "no SKU expected (--sku or --profile)")

    def one(device: dict[str, Any]) -> Part:
        device_id, memory = device.get("pci_device_id"), device.get("memory_total_mib")
        power = (device.get("power") or {}).get("default_limit_w")
        if not isinstance(device_id, str):
            return Part(Verdict.INCOMPLETE, f"PCI device id unreadable: {unavailable_reason(device_id)}")
        found = catalogue.identify(
            device_id,
            memory if isinstance(memory, (int, float)) else None,
            power if isinstance(power, (int, float)) else None,
        )
        if found.sku_id == expected:
            return Part(Verdict.PASS, f"{expected} ({found.evidence})")
        return Part(
            Verdict.FAIL,
            f"is {found.sku_id or 'not a catalogue SKU'} ({found.evidence}), expected {expected} "
            f"({node.expect.sku_from})",
            WRONG_SKU,
        )

    return per_gpu(node, "gpu_sku", one)


def xid_events(node: Node) -> Finding:
    name = "xid_events"
    if node.gpu_free:
        return Finding(name, Verdict.SKIP, "no GPU on this node, and none expected")
    log = node.reading["kernel_log"]
    if unavailable_reason(log):
        return Finding(name, Verdict.INCOMPLETE, f"kernel log unreadable: {unavailable_reason(log)}")
    events = xid.parse(log["lines"])
    window = "since boot (as far back as the ring buffer reaches)"
    since, uptime = node.expect.since_s, node.reading["uptime_s"]
    if since is not None and isinstance(uptime, (int, float)):
        events = [e for e in events if e.uptime_s >= uptime - since]
        window = f"in the last {since:g} s"
    elif since is not None:
        window = f"since boot: --since {since:g} not applied, the uptime is unreadable ({unavailable_reason(uptime)})"
    fatal = xid.fatal()
    bad = Counter((e.xid, e.address) for e in events if e.xid in fatal)
    other = Counter(e.xid for e in events if e.xid not in fatal)
    others = f"; other XIDs (not fatal): {', '.join(f'{x} x{n}' for x, n in sorted(other.items()))}" if other else ""
    if bad:
        listed = ", ".join(f"XID {x} ({fatal[x]['what']}) on {address} x{n}" for (x, address), n in sorted(bad.items()))
        action = actions.overall(xid.recommendation(x) for x, _ in sorted(bad))
        return Finding(name, Verdict.FAIL, f"{listed} {window}{others}", action)
    return Finding(
        name,
        Verdict.PASS,
        f"no fatal XID {window} ({log['records_read']} kernel log records, "
        f"{log['driver_lines']} from the driver){others}",
    )


CHECKS: tuple[Callable[[Node], Finding], ...] = (
    gpu_count,
    driver,
    gpu_sku,
    xid_events,
    gpu_checks.row_remaps,
    gpu_checks.ecc,
    gpu_checks.retired_pages,
    gpu_checks.pcie_width,
    gpu_checks.pcie_generation,
    gpu_checks.nvlink,
    gpu_checks.clock_events,
    gpu_checks.persistence_mode,
    gpu_checks.gpu_processes,
)
NAMES = tuple(fn.__name__ for fn in CHECKS)
__all__ = ["CHECKS", "NAMES", "Finding", "judge"]


def judge(reading: dict[str, Any], expect: Expectation) -> list[Finding]:
    """Every check, in a fixed order, on the reading alone."""
    node = Node(reading, expect)
    return [check(node) for check in CHECKS]
