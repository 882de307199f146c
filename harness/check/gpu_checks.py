"""`dossier check`'s checks of each GPU's device facts: the rules of harness.analysis.device_rules
(the ones `dossier health` and `dossier accept` apply too) with the thresholds a quick node check
chooses (the catalogue's node_check bounds, the profile's PCIe minimums), and check's rule for what
cannot be read (harness.check.findings.unreadable)."""

from __future__ import annotations

from typing import Any

from harness import catalogue
from harness.analysis import actions, device_rules
from harness.analysis.device_rules import Outcome, Problem
from harness.analysis.verdict import Verdict
from harness.check.findings import Finding, Node, Part, per_gpu, unreadable

PCIE_WIDTH = ("current_width", "max_width")
PCIE_GENERATION = ("current_gen", "max_gen")


def _failed(problems: list[Problem], text: str) -> Part:
    return Part(Verdict.FAIL, text, actions.overall(p.recommendation for p in problems))


def judged(outcome: Outcome, passed: str | None = None, fields: tuple[str, ...] | None = None) -> Part:
    """An outcome as check judges it: a feature the GPU lacks by check's unreadable rule, then the
    problems (FAIL), then the first field it could not read (of FIELDS, when given), then a caveat
    (SKIP), else PASS with PASSED (the rule's own words unless given)."""
    if outcome.unsupported is not None:
        return unreadable(outcome.unsupported) or Part(Verdict.SKIP, f"not recorded ({outcome.unsupported!r})")
    if outcome.problems:
        return _failed(outcome.problems, "; ".join(p.text for p in outcome.problems))
    for item in outcome.unread:
        if fields is None or item.field in fields:
            return unreadable(item.value) or Part(Verdict.INCOMPLETE, f"unreadable: {item.text}")
    if outcome.caveats:
        return Part(Verdict.SKIP, "; ".join(c.text.strip() for c in outcome.caveats))
    return Part(Verdict.PASS, passed if passed is not None else outcome.seen)


def row_remaps(node: Node) -> Finding:
    bound = catalogue.rule("check_remapped_rows_uncorrectable_max")
    return per_gpu(node, "row_remaps", lambda device: judged(device_rules.row_remaps(device, bound)))


def ecc(node: Node) -> Finding:
    return per_gpu(node, "ecc", lambda device: judged(device_rules.ecc(device)))


def retired_pages(node: Node) -> Finding:
    fail_at = catalogue.rule("check_retired_pages_fail_at")

    def one(device: dict[str, Any]) -> Part:
        outcome = device_rules.retired_pages(device, fail_at)
        if outcome.unsupported is not None:
            part = judged(outcome)
            return (
                part._replace(text=part.text + ": this GPU remaps rows instead (row_remaps)")
                if part.verdict == Verdict.SKIP
                else part
            )
        if outcome.problems:
            return _failed(outcome.problems, outcome.seen + "".join(p.text for p in outcome.problems))
        return Part(Verdict.PASS, outcome.seen)

    return per_gpu(node, "retired_pages", one)


def _link(device: dict[str, Any], rules: tuple[str, ...], minimum: Outcome) -> tuple[Outcome, list[Problem]]:
    """The link's outcome, and its problems of RULES with the MINIMUM's."""
    outcome = device_rules.pcie_link(device)
    return outcome, [p for p in outcome.problems if p.recommendation.rule in rules] + minimum.problems


def pcie_width(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> Part:
        minimum = device_rules.pcie_minimum(device, None, node.expect.pcie_min_width)
        outcome, problems = _link(device, ("pcie.narrower",), minimum)
        link = device.get("pcie") or {}
        text = f"x{link.get('current_width')} of x{link.get('max_width')}"
        if problems:
            return _failed(problems, text + "".join(p.text for p in problems))
        unread = judged(Outcome("pcie", tuple(outcome.unread)), fields=PCIE_WIDTH)
        return unread if unread.verdict != Verdict.PASS else Part(Verdict.PASS, text)

    return per_gpu(node, "pcie_width", one)


def pcie_generation(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> Part:
        minimum = device_rules.pcie_minimum(device, node.expect.pcie_min_generation, None)
        outcome, problems = _link(device, ("pcie.slot_caps", "pcie.generation_low"), minimum)
        link = device.get("pcie") or {}
        text = f"Gen{link.get('current_gen')} of Gen{link.get('max_gen')}"
        if problems:
            return _failed(problems, text + "".join(p.text for p in problems))
        unread = judged(Outcome("pcie", tuple(outcome.unread)), fields=PCIE_GENERATION)
        if unread.verdict != Verdict.PASS:
            return unread
        if outcome.caveats:
            return Part(
                Verdict.SKIP,
                text + outcome.caveats[0].text + ", so the generation is judged only where the idle link holds it "
                "(the width is judged)",
            )
        return Part(Verdict.PASS, text)

    return per_gpu(node, "pcie_generation", one)


def nvlink(node: Node) -> Finding:
    peers = len(node.devices or []) - 1

    def one(device: dict[str, Any]) -> Part:
        outcome = device_rules.nvlink(device, peers)
        if outcome.unsupported is None:
            return judged(outcome, passed=f"{outcome.seen} up")
        part = judged(Outcome("nvlink", unsupported=outcome.unsupported))
        if part.verdict == Verdict.FAIL or not outcome.problems:
            return part._replace(text=part.text + ("" if peers else " (one GPU: no NVLink peer)"))
        return _failed(outcome.problems, f"{outcome.problems[0].text}: {part.text}")

    return per_gpu(node, "nvlink", one)


def clock_events(node: Node) -> Finding:
    return per_gpu(node, "clock_events", lambda device: judged(device_rules.hardware_slowdown(device)))


def persistence_mode(node: Node) -> Finding:
    def one(device: dict[str, Any]) -> Part:
        outcome = device_rules.mode(device, "persistence", "enabled")
        part = judged(outcome, passed="persistence mode enabled")
        if part.verdict == Verdict.FAIL:
            return part._replace(text=f"persistence mode {part.text} (nvidia-smi -pm 1, or run nvidia-persistenced)")
        return part

    return per_gpu(node, "persistence_mode", one)


def gpu_processes(node: Node) -> Finding:
    if not node.expect.no_gpu_processes:
        return Finding("gpu_processes", Verdict.SKIP, "not asked (--no-gpu-processes fails a GPU any process holds)")

    def one(device: dict[str, Any]) -> Part:
        part = judged(device_rules.processes(device), passed="no process")
        return part._replace(text=f"held by {part.text}") if part.verdict == Verdict.FAIL else part

    return per_gpu(node, "gpu_processes", one)
