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
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.analysis.clock_events import HARDWARE_SLOWDOWNS
from harness.analysis.health.contract_facts import unavailable_reason
from harness.analysis.verdict import Verdict, overall
from harness.check import xid
from harness.check.expectation import Expectation, version_tuple

JUDGED_ORDER = (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN)


@dataclass(frozen=True)
class Finding:
    name: str
    verdict: Verdict
    message: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "verdict": str(self.verdict), "message": self.message}


def unreadable(value: Any) -> tuple[Verdict, str] | None:
    """None for a value; for an unavailable field, its verdict and reason (see the module's rule)."""
    reason = unavailable_reason(value)
    if reason is None:
        return None
    if "NotSupported" in reason or "Not Supported" in reason:
        return Verdict.SKIP, f"not supported ({reason})"
    if "GpuIsLost" in reason or "GPU is lost" in reason:
        return Verdict.FAIL, f"the GPU is lost ({reason})"
    return Verdict.INCOMPLETE, f"unreadable: {reason}"


# --- the node's GPUs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A reading with what the node should have, and the few facts every check asks."""

    reading: dict[str, Any]
    expect: Expectation

    @property
    def devices(self) -> list[dict[str, Any]] | None:
        devices = self.reading["devices"]
        return devices if isinstance(devices, list) else None

    @property
    def pci_count(self) -> int | None:
        pci = self.reading["pci_gpus"]
        return len(pci) if isinstance(pci, list) else None

    @property
    def expected_gpus(self) -> int | None:
        """--expect-gpus, else every NVIDIA GPU on the PCI bus, at least one where a GPU SKU is expected
        (None when neither is known)."""
        if self.expect.gpus is not None or self.pci_count is None:
            return self.expect.gpus
        return max(self.pci_count, 1 if self.expect.sku else 0)

    @property
    def gpu_free(self) -> bool:
        """No GPU expected, none on the PCI bus and none in NVML: a node whose GPU checks have nothing to judge."""
        return self.expected_gpus == 0 and self.pci_count in (0, None) and not self.devices

    def why_no_devices(self) -> str:
        reason = unavailable_reason(self.reading["devices"])
        return reason or "NVML lists no GPU"


def label(device: dict[str, Any]) -> str:
    return f"GPU{device.get('nvml_index')}"


def per_gpu(node: Node, name: str, judge_one: Callable[[dict[str, Any]], tuple[Verdict, str]]) -> Finding:
    """NAME judged on every GPU: the worst verdict, the messages of the GPUs that have it."""
    if node.gpu_free:
        return Finding(name, Verdict.SKIP, "no GPU on this node, and none expected")
    devices = node.devices
    if not devices:
        return Finding(name, Verdict.INCOMPLETE, f"no GPU readable ({node.why_no_devices()})")
    parts = []
    for device in devices:
        if "unreadable" in device:
            parts.append((Verdict.INCOMPLETE, f"{label(device)}: unreadable: {device['unreadable']}"))
        else:
            verdict, text = judge_one(device)
            parts.append((verdict, f"{label(device)}: {text}"))
    verdicts = [v for v, _ in parts]
    verdict = Verdict.SKIP if all(v == Verdict.SKIP for v in verdicts) else overall(verdicts)
    shown = [text for v, text in parts if v == verdict] if verdict in JUDGED_ORDER else [text for _, text in parts]
    return Finding(name, verdict, "; ".join(shown))


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
        return Finding(
            name, Verdict.FAIL, f"expected {expected} GPU(s) ({source}), NVML lists {len(devices)}; {on_bus}"
        )
    why = node.why_no_devices()
    if pci is not None and pci == expected == 0:
        return Finding(name, Verdict.PASS, f"no GPU, as expected: the PCI bus lists no NVIDIA GPU (NVML: {why})")
    if pci is not None and pci != expected:
        return Finding(name, Verdict.FAIL, f"expected {expected} GPU(s) ({source}), {on_bus}; NVML: {why}")
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
            return Finding(name, Verdict.FAIL, f"the driver does not answer: NVML: {nvml_why}; {module_text}")
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
        )
    if node.expect.min_driver is None:
        return Finding(name, Verdict.PASS, text)
    try:
        below = version_tuple(version) < version_tuple(node.expect.min_driver)
    except ValueError:
        return Finding(name, Verdict.INCOMPLETE, f"NVML's driver version {version!r} is not numbers")
    if below:
        return Finding(name, Verdict.FAIL, f"{text}: below the minimum {node.expect.min_driver}")
    return Finding(name, Verdict.PASS, f"{text}, at least {node.expect.min_driver}")


def gpu_sku(node: Node) -> Finding:
    expected = node.expect.sku
    if expected is None:
        return Finding("gpu_sku", Verdict.SKIP, "no SKU expected (--sku or --profile)")

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        device_id, memory = device.get("pci_device_id"), device.get("memory_total_mib")
        power = (device.get("power") or {}).get("default_limit_w")
        if not isinstance(device_id, str):
            return Verdict.INCOMPLETE, f"PCI device id unreadable: {unavailable_reason(device_id)}"
        found = catalogue.identify(
            device_id,
            memory if isinstance(memory, (int, float)) else None,
            power if isinstance(power, (int, float)) else None,
        )
        if found.sku_id == expected:
            return Verdict.PASS, f"{expected} ({found.evidence})"
        return (
            Verdict.FAIL,
            f"is {found.sku_id or 'not a catalogue SKU'} ({found.evidence}), expected {expected} "
            f"({node.expect.sku_from})",
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
        return Finding(name, Verdict.FAIL, f"{listed} {window}{others}")
    return Finding(
        name,
        Verdict.PASS,
        f"no fatal XID {window} ({log['records_read']} kernel log records, "
        f"{log['driver_lines']} from the driver){others}",
    )


def row_remaps(node: Node) -> Finding:
    bound = catalogue.rule("check_remapped_rows_uncorrectable_max")

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        ecc = device.get("ecc") or {}
        pending, failure, uncorrected = (
            ecc.get(k) for k in ("remapped_rows_pending", "remapped_rows_failure", "remapped_rows_uncorrected")
        )
        for value in (pending, failure):
            if (unread := unreadable(value)) is not None:
                return unread
        problems = (["a row remap is pending (reset the GPU to apply it)"] if pending else []) + (
            ["a row remap failed (an RMA case)"] if failure else []
        )
        if isinstance(uncorrected, int) and uncorrected > bound:
            problems.append(f"{uncorrected} rows remapped for uncorrectable errors, above {bound}")
        if problems:
            return Verdict.FAIL, "; ".join(problems)
        return (
            Verdict.PASS,
            f"rows remapped: {ecc.get('remapped_rows_corrected')} corrected, {uncorrected} "
            "uncorrectable; none pending or failed",
        )

    return per_gpu(node, "row_remaps", one)


def ecc(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        facts = device.get("ecc") or {}
        mode = facts.get("mode_current")
        if (unread := unreadable(mode)) is not None:
            return unread
        if mode != "enabled":
            return Verdict.FAIL, f"ECC {mode}"
        counts = {k: facts.get(k) for k in ("volatile_uncorrected_errors", "aggregate_uncorrected_errors")}
        for value in counts.values():
            if (unread := unreadable(value)) is not None:
                return unread
        bad = [f"{k} = {v}" for k, v in counts.items() if v]
        if bad:
            return Verdict.FAIL, "uncorrectable ECC errors: " + ", ".join(bad)
        return Verdict.PASS, "ECC enabled, no uncorrectable error (volatile or aggregate)"

    return per_gpu(node, "ecc", one)


def retired_pages(node: Node) -> Finding:
    fail_at = catalogue.rule("check_retired_pages_fail_at")

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        pages = device["retired_pages"]  # the reader records it for every readable GPU
        if (unread := unreadable(pages)) is not None:
            verdict, why = unread
            return verdict, why + (": this GPU remaps rows instead (row_remaps)" if verdict == Verdict.SKIP else "")
        single = pages["multiple_single_bit_ecc"] if isinstance(pages["multiple_single_bit_ecc"], int) else 0
        total, pending = pages["double_bit_ecc"] + single, pages["pending"]
        text = (
            f"{total} page(s) retired ({pages['double_bit_ecc']} double-bit, {pages['multiple_single_bit_ecc']} "
            f"single-bit), retirement pending: {pending}"
        )
        if pending is True and total >= fail_at:
            return Verdict.FAIL, f"{text}: the retirement table is full ({fail_at} or more)"
        return Verdict.PASS, text

    return per_gpu(node, "retired_pages", one)


def _pcie(device: dict[str, Any], keys: tuple[str, ...]) -> tuple[dict[str, Any], tuple[Verdict, str] | None]:
    link = device.get("pcie") or {}
    for key in keys:
        if unreadable(link.get(key)):
            return link, unreadable(link.get(key))
    return link, None


def pcie_width(node: Node) -> Finding:
    minimum = node.expect.pcie_min_width

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        link, bad = _pcie(device, ("current_width", "max_width"))
        if bad:
            return bad
        text = f"x{link['current_width']} of x{link['max_width']}"
        if link["current_width"] < link["max_width"]:
            return (
                Verdict.FAIL,
                f"{text}: the link trained narrower than its maximum (reseat the card, check the riser)",
            )
        if minimum is not None and link["max_width"] < minimum:
            return Verdict.FAIL, f"{text}: below the profile's x{minimum}"
        return Verdict.PASS, text

    return per_gpu(node, "pcie_width", one)


def pcie_generation(node: Node) -> Finding:
    minimum = node.expect.pcie_min_generation

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        link, bad = _pcie(device, ("current_gen", "max_gen"))
        if bad:
            return bad
        current, top, gpu_top = link["current_gen"], link["max_gen"], link.get("gpu_max_gen")
        text = f"Gen{current} of Gen{top}"
        if isinstance(gpu_top, int) and gpu_top > top:
            return Verdict.FAIL, f"{text}: the slot caps the link below the GPU's Gen{gpu_top}"
        if minimum is not None and top < minimum:
            return Verdict.FAIL, f"{text}: below the profile's Gen{minimum}"
        if current < top:
            names = (device.get("clock_event_reasons") or {}).get("names")
            if isinstance(names, list) and "gpu_idle" in names:
                return (
                    Verdict.SKIP,
                    f"{text} while idle: the driver lowers an idle link's speed to save power, so "
                    "the generation is judged only where the idle link holds it (the width is judged)",
                )
            return Verdict.FAIL, f"{text} while not idle"
        return Verdict.PASS, text

    return per_gpu(node, "pcie_generation", one)


def nvlink(node: Node) -> Finding:
    many = len(node.devices or []) > 1

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        links = device["nvlink"]  # the reader records it for every readable GPU
        if (unread := unreadable(links)) is not None:
            verdict, why = unread
            sxm = "SXM" in str((device.get("sku") or {}).get("form_factor") or "")
            if verdict == Verdict.SKIP and many and sxm:
                return Verdict.FAIL, f"an SXM GPU beside others reports no NVLink: {why}"
            return verdict, why + ("" if many else " (one GPU: no NVLink peer)")
        down = [entry["link"] for entry in links if not entry.get("active")]
        if down:
            return Verdict.FAIL, f"links {down} down of {len(links)}"
        return Verdict.PASS, f"{len(links)} link(s) up"

    return per_gpu(node, "nvlink", one)


def clock_events(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        reasons = device.get("clock_event_reasons") or {}
        if (unread := unreadable(reasons.get("mask"))) is not None:
            return unread
        slow = [n for n in reasons.get("names", []) if n in HARDWARE_SLOWDOWNS]
        if slow:
            return Verdict.FAIL, f"clocks held down by {', '.join(slow)} (mask {reasons['mask']:#x})"
        return (
            Verdict.PASS,
            f"no hardware or thermal slowdown (active: {', '.join(reasons.get('names') or []) or 'none'})",
        )

    return per_gpu(node, "clock_events", one)


def persistence_mode(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        mode = (device.get("modes") or {}).get("persistence")
        if (unread := unreadable(mode)) is not None:
            return unread
        if mode != "enabled":
            return Verdict.FAIL, f"persistence mode {mode} (nvidia-smi -pm 1, or run nvidia-persistenced)"
        return Verdict.PASS, "persistence mode enabled"

    return per_gpu(node, "persistence_mode", one)


def gpu_processes(node: Node) -> Finding:
    if not node.expect.no_gpu_processes:
        return Finding("gpu_processes", Verdict.SKIP, "not asked (--no-gpu-processes fails a GPU any process holds)")

    def one(device: dict[str, Any]) -> tuple[Verdict, str]:
        listed = device.get("processes")
        if (unread := unreadable(listed)) is not None:
            return unread
        if listed:
            return Verdict.FAIL, "held by " + ", ".join(f"pid {p.get('pid')} ({p.get('name')})" for p in listed)
        return Verdict.PASS, "no process"

    return per_gpu(node, "gpu_processes", one)


CHECKS: tuple[Callable[[Node], Finding], ...] = (
    gpu_count,
    driver,
    gpu_sku,
    xid_events,
    row_remaps,
    ecc,
    retired_pages,
    pcie_width,
    pcie_generation,
    nvlink,
    clock_events,
    persistence_mode,
    gpu_processes,
)
NAMES = tuple(fn.__name__ for fn in CHECKS)


def judge(reading: dict[str, Any], expect: Expectation) -> list[Finding]:
    """Every check, in a fixed order, on the reading alone."""
    node = Node(reading, expect)
    return [check(node) for check in CHECKS]
