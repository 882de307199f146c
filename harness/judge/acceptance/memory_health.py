"""Acceptance: the memory's health (ECC, row remapping) and the host link under load: health
contracts (harness.analysis.health.contracts) re-judged on the idle and the under-load document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.analysis import actions, device_rules
from harness.analysis.health import contract_facts, device_contracts
from harness.analysis.units import number_or_none
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import Judging
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts


def _health_documents(facts: BundleFacts) -> list[tuple[str, dict[str, Any]]]:
    return [(step, doc) for step in ("health", "health-load") if (doc := facts.document(step)) is not None]


def gpus(document: dict[str, Any]) -> list[dict[str, Any]]:
    devices, _ = contract_facts.gpus(document)
    return devices


def _contract_result(
    facts: BundleFacts,
    name: str,
    title: str,
    contract: Callable,
    rule: Callable[[dict[str, Any]], device_rules.Outcome],
    fields: str,
    measure: Callable[[list[tuple[str, dict]]], Value],
    threshold: Value,
) -> list[Result]:
    """A criterion that is a health contract re-judged on the idle and the under-load document (its
    action: the most severe of the contract's device RULE's problems)."""
    documents = _health_documents(facts)
    evidence = (
        " and ".join(f"{facts.output(step)} devices[].{fields}" for step, _ in documents)
        or f"raw/health.json devices[].{fields}"
    )
    judging = Judging(name, title, evidence)
    if not documents:
        return [judging.incomplete(f"{facts.step_why('health')}; {facts.step_why('health-load')}", threshold=threshold)]
    judged = [(step, contract(doc)) for step, doc in documents]
    failed = [f"{step}: {c['evidence']}" for step, c in judged if c["status"] == Verdict.FAIL]
    passed = [f"{step}: {c['evidence']}" for step, c in judged if c["status"] == Verdict.PASS]
    measured = measure(documents)
    if failed:
        action = actions.overall(
            p.recommendation for _, doc in documents for device in gpus(doc) for p in rule(device).problems
        )
        return [judging.failed("; ".join(failed), measured, threshold, action)]
    if not passed:
        return [judging.incomplete("; ".join(f"{step}: {c['evidence']}" for step, c in judged), threshold=threshold)]
    return [judging.passed("; ".join(passed), measured, threshold)]


def _shown(value: Any) -> str:
    reason = contract_facts.unavailable_reason(value)
    return f"unavailable ({reason})" if reason else str(value).lower()


def _sum_counts(documents, keys) -> tuple[int | None, list[str]]:
    total = 0
    parts: list[str] = []
    for step, doc in documents:
        for device in gpus(doc):
            ecc = device.get("ecc", {})
            values = [number_or_none(ecc.get(k)) for k in keys]
            counts = [v for v in values if v is not None]
            if len(counts) != len(values):
                return None, parts
            total = max(total, int(sum(counts)))
            parts.append(
                f"GPU{device.get('nvml_index')} {step}: "
                + ", ".join(f"{k.replace('_', ' ')} {int(v)}" for k, v in zip(keys, counts, strict=True))
            )
    return total, parts


def ecc_uncorrectable_zero(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(documents) -> Value:
        worst, parts = _sum_counts(documents, ("volatile_uncorrected_errors", "aggregate_uncorrected_errors"))
        return Value(worst, "errors", "; ".join(parts) if worst is not None else "counts unreadable")

    return _contract_result(
        facts,
        "ecc_uncorrectable_zero",
        "Memory has no uncorrectable ECC errors (and ECC is on)",
        device_contracts.ecc_enabled_no_uncorrectable,
        device_rules.ecc,
        "ecc.mode_current, ecc.volatile_uncorrected_errors, ecc.aggregate_uncorrected_errors",
        measure,
        Value(0, "errors", "ECC enabled and 0 uncorrectable errors, volatile and aggregate, idle and under load"),
    )


def row_remaps_clean(facts: BundleFacts, profile: Profile) -> list[Result]:
    def measure(documents) -> Value:
        bad, parts = 0, []
        for step, doc in documents:
            for device in gpus(doc):
                ecc = device.get("ecc", {})
                pending, failure = ecc.get("remapped_rows_pending"), ecc.get("remapped_rows_failure")
                bad = max(bad, int(pending is True) + int(failure is True))
                parts.append(
                    f"GPU{device.get('nvml_index')} {step}: pending {_shown(pending)}, failure {_shown(failure)}"
                )
        return Value(bad, "rows pending or failed", "; ".join(parts))

    return _contract_result(
        facts,
        "row_remaps_clean",
        "No memory row remap is pending or has failed",
        device_contracts.no_pending_or_failed_row_remaps,
        device_rules.row_remaps,
        "ecc.remapped_rows_pending, ecc.remapped_rows_failure",
        measure,
        Value(0, "rows pending or failed", "no pending and no failed row remap"),
    )


def pcie_link_at_max_under_load(facts: BundleFacts, profile: Profile) -> list[Result]:
    name = "pcie_link_at_max_under_load"
    title = "The host link (PCIe) runs at its full generation and width while working"
    gen, width = profile.threshold("pcie_min_generation"), profile.threshold("pcie_min_width")
    stated = f"; the SKU's Gen{gen} x{width}" if gen and width else ""
    threshold = Value(
        f"Gen{gen} x{width}" if gen and width else "link maximum",
        "PCIe generation x lanes",
        f"current generation and width equal the link's maximum{stated}, read under load",
    )
    evidence = (
        f"{facts.output('health-load')} devices[].pcie.current_gen, max_gen, gpu_max_gen, current_width, max_width"
    )
    judging = Judging(name, title, evidence)
    document = facts.document("health-load")
    if document is None or not gpus(document):
        why = (
            facts.step_why("health-load")
            if document is None
            else f"the under-load health lists no GPU: {contract_facts.gpus(document)[1]}"
        )
        return [
            judging.incomplete(
                why + " (an idle reading cannot tell: the driver lowers the link speed when idle)", threshold=threshold
            )
        ]
    devices = gpus(document)
    links = [(d, d.get("pcie", {})) for d in devices]
    measured = Value(
        ", ".join(sorted({f"Gen{p.get('current_gen')} x{p.get('current_width')}" for _, p in links})),
        "PCIe generation x lanes",
        "; ".join(
            f"GPU{d.get('nvml_index')} Gen{p.get('current_gen')} x{p.get('current_width')} "
            f"of Gen{p.get('max_gen')} x{p.get('max_width')}"
            for d, p in links
        ),
    )
    judged = device_contracts.pcie_link_at_max(document)
    problems = [judged["evidence"]] if judged["status"] != Verdict.PASS else []
    found = [p for d in devices for p in device_rules.pcie_link(d, may_idle=False).problems]
    for d, p in links:
        below = device_rules.pcie_minimum(d, gen, width).problems
        found += below
        problems += [
            f"GPU{d.get('nvml_index')} Gen{p.get('max_gen')} x{p.get('max_width')} at most{b.text}" for b in below
        ]
    if problems:
        return [
            judging.failed("; ".join(problems), measured, threshold, actions.overall(p.recommendation for p in found))
        ]
    return [judging.passed(judged["evidence"] + " (under load)", measured, threshold)]


ECC_UNCORRECTABLE_ZERO = Criterion(
    "ecc_uncorrectable_zero",
    "Memory has no uncorrectable ECC errors",
    ("health", "health-load"),
    ecc_uncorrectable_zero,
)
ROW_REMAPS_CLEAN = Criterion(
    "row_remaps_clean", "No memory row remap is pending or has failed", ("health", "health-load"), row_remaps_clean
)
PCIE_LINK_AT_MAX_UNDER_LOAD = Criterion(
    "pcie_link_at_max_under_load",
    "The host link (PCIe) runs at its full generation and width while working",
    ("health-load",),
    pcie_link_at_max_under_load,
)
