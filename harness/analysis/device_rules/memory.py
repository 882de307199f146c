"""The memory's rules: ECC, row remapping, retired pages (harness.analysis.device_rules)."""

from __future__ import annotations

from typing import Any

from harness.analysis.actions import Action
from harness.analysis.device_rules.outcome import Item, Outcome, problem, unread
from harness.analysis.units import show, unavailable_reason

ECC_UNCORRECTABLE = ("volatile_uncorrected_errors", "aggregate_uncorrected_errors")
MEMORY_ERRORS_SOURCE = (
    "NVIDIA GPU memory error management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt): a row remap "
    "takes effect at the next GPU reset; a remap failure is an RMA case"
)


def ecc(device: dict[str, Any]) -> Outcome:
    """ECC on, and no uncorrectable error (volatile: since the driver loaded; aggregate: the GPU's life)."""
    facts = device.get("ecc") or {}
    mode = facts.get("mode_current")
    if unavailable_reason(mode):
        return Outcome("ecc", unsupported=mode)
    items: list[Item] = []
    if mode != "enabled":
        items.append(
            problem(
                f"ECC {mode}",
                Action.RECONFIGURE,
                "ecc.mode",
                "ECC is off: enable it (nvidia-smi -e 1) and reboot for it to take effect",
            )
        )
    for key in ECC_UNCORRECTABLE:
        value = facts.get(key)
        if unavailable_reason(value):
            items.append(unread(key, value))
        elif value:
            items.append(
                problem(
                    f"{key} = {value}",
                    Action.RESET_GPU,
                    "ecc.uncorrectable",
                    "uncorrectable ECC errors: reset the GPU (nvidia-smi -r) so the failing memory is remapped, "
                    f"then check again; if they recur, inspect the hardware ({MEMORY_ERRORS_SOURCE})",
                )
            )
    seen = (
        f"ECC {mode}, uncorrectable volatile {show(facts.get(ECC_UNCORRECTABLE[0]))}"
        f" / aggregate {show(facts.get(ECC_UNCORRECTABLE[1]))}"
    )
    return Outcome("ecc", tuple(items), seen)


def row_remaps(device: dict[str, Any], uncorrectable_max: float | None = None) -> Outcome:
    """No row remap pending or failed; with UNCORRECTABLE_MAX (the catalogue's bound), no more rows
    remapped for uncorrectable errors than that."""
    facts = device.get("ecc") or {}
    pending, failure = facts.get("remapped_rows_pending"), facts.get("remapped_rows_failure")
    uncorrected = facts.get("remapped_rows_uncorrected")
    if unavailable_reason(pending) and unavailable_reason(failure):
        return Outcome("row_remaps", unsupported=pending)
    items: list[Item] = []
    for what, value, action, why in (
        ("pending", pending, Action.RESET_GPU, "a row remap waits for a GPU reset (nvidia-smi -r) to take effect"),
        ("failure", failure, Action.INSPECT_HARDWARE, "a row remap failed: the memory cannot be repaired in place"),
    ):
        if unavailable_reason(value):
            items.append(unread(f"remapped_rows_{what}", value, f"remap {what}: {show(value)}"))
        elif value is not False:
            items.append(
                problem(f"remap {what}: {value}", action, f"row_remaps.{what}", f"{why} ({MEMORY_ERRORS_SOURCE})")
            )
    if uncorrectable_max is not None and isinstance(uncorrected, int) and uncorrected > uncorrectable_max:
        items.append(
            problem(
                f"{uncorrected} rows remapped for uncorrectable errors, above {uncorrectable_max:g}",
                Action.INSPECT_HARDWARE,
                "row_remaps.uncorrectable",
                "more rows remapped for uncorrectable errors than the catalogue allows "
                "(rule check_remapped_rows_uncorrectable_max, with its source): an RMA case",
            )
        )
    seen = (
        f"remapped rows corrected {show(facts.get('remapped_rows_corrected'))}, "
        f"uncorrected {show(uncorrected)}, none pending or failed"
    )
    return Outcome("row_remaps", tuple(items), seen)


def retired_pages(device: dict[str, Any], fail_at: float) -> Outcome:
    """Pages retired for ECC errors (GPUs before row remapping): a full table with a retirement
    pending (FAIL_AT, the catalogue's rule) is an RMA case."""
    pages = device.get("retired_pages")
    if unavailable_reason(pages) or not isinstance(pages, dict):
        return Outcome("retired_pages", unsupported=pages)
    single = pages["multiple_single_bit_ecc"] if isinstance(pages["multiple_single_bit_ecc"], int) else 0
    total, pending = pages["double_bit_ecc"] + single, pages["pending"]
    seen = (
        f"{total} page(s) retired ({pages['double_bit_ecc']} double-bit, {pages['multiple_single_bit_ecc']} "
        f"single-bit), retirement pending: {pending}"
    )
    if pending is True and total >= fail_at:
        full = problem(
            f": the retirement table is full ({fail_at:g} or more)",
            Action.INSPECT_HARDWARE,
            "retired_pages.full",
            "no page can be retired any more (rule check_retired_pages_fail_at, with its source): an RMA case",
        )
        return Outcome("retired_pages", (full,), seen)
    return Outcome("retired_pages", (), seen)
