"""The links' rules: PCIe generation and width, NVLink (harness.analysis.device_rules)."""

from __future__ import annotations

from typing import Any

from harness.analysis.actions import Action, Recommendation
from harness.analysis.device_rules.outcome import Caveat, Item, Outcome, Problem, problem, unread
from harness.analysis.units import show, unavailable_reason

PCIE_FIELDS = ("current_gen", "max_gen", "current_width", "max_width")

# What to do about a degraded PCIe link (the transfer probe's measured link says the same).
NARROWER = Recommendation(
    Action.INSPECT_HARDWARE,
    "pcie.narrower",
    "a link that trains narrower than its lanes is a seating, riser or cable fault: reseat the card",
)
GENERATION_LOW = Recommendation(
    Action.REBOOT_NODE,
    "pcie.generation_low",
    "the link trained below its generation while working: links train at boot, so a reboot can bring it back "
    "to full speed; if it comes back low, inspect the hardware",
)
SLOT_CAPS = Recommendation(
    Action.INSPECT_HARDWARE,
    "pcie.slot_caps",
    "the slot or its BIOS setting allows less than the GPU's generation: move the card to a slot wired for it, "
    "or fix the BIOS PCIe setting",
)
NVLINK_DOWN = Recommendation(
    Action.RESET_GPU,
    "nvlink.inactive",
    "inactive NVLink links: check the fabric (nvidia-smi nvlink -s, the fabric manager) and reset the GPUs; a "
    "link still down after a reset is hardware",
)


def idle(device: dict[str, Any]) -> bool:
    names = (device.get("clock_event_reasons") or {}).get("names")
    return isinstance(names, list) and "gpu_idle" in names


def pcie_link(device: dict[str, Any], may_idle: bool = True) -> Outcome:
    """The PCIe link at the generation and width it can run: the slot does not cap it below the GPU's
    generation, it did not train narrower, and it runs at its generation while working (an idle link
    may run slower, which the reading cannot judge: a Caveat, when MAY_IDLE). Items in that order,
    after the fields that could not be read; each part is judged where its fields were read."""
    link = device.get("pcie") or {}
    items: list[Item] = [
        unread(k, link.get(k), str(unavailable_reason(link.get(k))))
        for k in PCIE_FIELDS
        if unavailable_reason(link.get(k))
    ]
    read = {k: link.get(k) for k in PCIE_FIELDS if not unavailable_reason(link.get(k))}
    cur_gen, max_gen, cur_w, max_w = (read.get(k) for k in PCIE_FIELDS)
    gpu_max = link.get("gpu_max_gen")
    if isinstance(gpu_max, int) and isinstance(max_gen, int) and gpu_max > max_gen:
        items.append(Problem(f": the slot caps the link below the GPU's Gen{gpu_max}", SLOT_CAPS))
    if isinstance(cur_w, int) and isinstance(max_w, int) and cur_w < max_w:
        items.append(Problem(": link trained narrower than its maximum", NARROWER))
    if isinstance(cur_gen, int) and isinstance(max_gen, int) and cur_gen < max_gen:
        items.append(_generation_low(may_idle and idle(device)))
    seen = f"Gen{show(link.get('current_gen'))} x{show(link.get('current_width'))} of Gen{show(link.get('max_gen'))} x{show(link.get('max_width'))}"
    return Outcome("pcie", tuple(items), seen)


def _generation_low(idle_now: bool) -> Item:
    if idle_now:
        return Caveat(" while idle (the driver lowers link speed to save power)")
    return Problem(" while working", GENERATION_LOW)


def pcie_minimum(device: dict[str, Any], min_gen: int | None, min_width: int | None) -> Outcome:
    """The link can run at least MIN_GEN and MIN_WIDTH (an acceptance profile's, or a SKU's)."""
    link = device.get("pcie") or {}
    top_gen, top_width = link.get("max_gen"), link.get("max_width")
    items: list[Item] = []
    rule, why = "pcie.below_minimum", "the link cannot run at the generation or width this SKU is bought with"
    if min_width is not None and isinstance(top_width, int) and top_width < min_width:
        items.append(problem(f": below the profile's x{min_width}", Action.INSPECT_HARDWARE, rule, why))
    if min_gen is not None and isinstance(top_gen, int) and top_gen < min_gen:
        items.append(problem(f": below the profile's Gen{min_gen}", Action.INSPECT_HARDWARE, rule, why))
    return Outcome("pcie.minimum", tuple(items))


def nvlink(device: dict[str, Any], peers: int, expected_active: int | None = None) -> Outcome:
    """Every NVLink link active (with EXPECTED_ACTIVE, that many links, all active); an SXM GPU beside PEERS other
    GPUs that reports no NVLink at all is broken too (its fabric is down)."""
    links = device.get("nvlink")
    sxm = "SXM" in str((device.get("sku") or {}).get("form_factor") or "")
    if not isinstance(links, list):
        missing = links if unavailable_reason(links) else {"unavailable": f"not recorded ({links!r})"}
        found: tuple[Item, ...] = ()
        if peers and sxm:
            found = (
                problem(
                    "an SXM GPU beside others reports no NVLink",
                    Action.RESET_GPU,
                    "nvlink.missing",
                    "an SXM GPU's NVLink fabric is down: start the fabric manager and reset the GPUs; "
                    "if it stays down, inspect the hardware",
                ),
            )
        return Outcome("nvlink", found, unsupported=missing)
    active = sum(1 for link in links if link.get("active"))
    inactive = [link["link"] for link in links if not link.get("active")]
    items: list[Item] = []
    if inactive:
        items.append(Problem(f"links {inactive} inactive", NVLINK_DOWN))
    if expected_active is not None and len(links) != expected_active:  # (a link it has that is down: inactive)
        items.append(
            problem(
                f"{len(links)} NVLink links, the SKU has {expected_active}",
                Action.INSPECT_HARDWARE,
                "nvlink.count",
                "the GPU has not the NVLink links its SKU has",
            )
        )
    return Outcome("nvlink", tuple(items), f"{active}/{len(links)} links active")
