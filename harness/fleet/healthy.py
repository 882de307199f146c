"""Which nodes of a fleet a baseline profile is made from, and why every other node is left out.

A pure function of fleet.json (the nodes as checked, and the flags of the comparison): a node is
healthy when its bundle verified (status ok), `dossier accept` judged it PASS or WARN, it holds GPUs
of one catalogue SKU, and no compared metric flags it (an outlier rate, a count above zero, a state
unlike most nodes', a result digest unlike its software stack's: possible silent data corruption).
A bundle found under two nodes is one measurement, not one per node: every node holding it is left
out. A node that cannot be judged is never healthy.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.analysis import fleet as fleet_analysis
from harness.analysis.verdict import Verdict, parse

RULE = (
    "healthy: its bundle verified, `dossier accept` judged it pass or warn, its GPUs are of one catalogue "
    "SKU, no compared metric flags it (an outlier, a count above zero, a state unlike most nodes', a result "
    "digest unlike its stack's: possible silent data corruption), and no other node holds the same bundle"
)
FLAG_REASONS = {
    fleet_analysis.RATE: "outlier",
    fleet_analysis.COUNT: "count above zero",
    fleet_analysis.STATE: "state unlike most nodes",
    fleet_analysis.DIGEST: "possible silent data corruption",
}
PASSED = (Verdict.PASS, Verdict.WARN)


@dataclass(frozen=True)
class LeftOut:
    """A node the baseline is not made from: the first reason (what it is counted under) and all of them."""

    node: str
    sku: str | None  # None: no catalogue SKU identified, or not known (no verified bundle)
    verified: bool
    reason: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "sku": self.sku, "reason": self.reason, "why": self.why}


@dataclass(frozen=True)
class Selection:
    healthy: dict[str, list[dict[str, Any]]]  # SKU -> its healthy nodes (fleet.json node entries), in node order
    left_out: list[LeftOut]  # in node order

    def counts(self) -> dict[str, int]:
        return counts(self.left_out)


def counts(left_out: list[LeftOut]) -> dict[str, int]:
    """reason -> how many of LEFT_OUT are left out for it (each under its first reason)."""
    return dict(sorted(Counter(item.reason for item in left_out).items()))


def in_words(left_out: list[LeftOut]) -> str:
    """'3 acceptance fail, 1 not verified (failed)'."""
    return ", ".join(f"{n} {reason}" for reason, n in counts(left_out).items()) or "none"


def _reasons(node: dict[str, Any], flags: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(reason, detail) for each thing that keeps NODE out; none for a healthy node."""
    if node["status"] != "ok":
        return [(f"not verified ({node['status']})", node.get("why") or node["status"])]
    found = []
    acceptance = node["acceptance"]
    verdict = parse(acceptance["verdict"])
    if verdict not in PASSED:
        failed = ", ".join(f["name"] for f in acceptance.get("failed") or []) or ", ".join(
            acceptance.get("incomplete") or []
        )
        found.append((f"acceptance {verdict}", failed or acceptance.get("why") or str(verdict)))
    sku = node.get("sku")
    if not sku:
        found.append(("no catalogue SKU", "health identified no catalogue SKU on the node"))
    elif "+" in sku:
        found.append(("several SKUs", f"GPUs of {sku.replace('+', ' and ')}: a baseline is of one SKU"))
    for flag in flags:
        found.append((f"flagged: {FLAG_REASONS.get(flag['kind'], flag['kind'])}", f"{flag['metric']}: {flag['why']}"))
    return found


def select(document: dict[str, Any]) -> Selection:
    """The healthy nodes of each SKU in fleet.json DOCUMENT, and every other node with why."""
    flags: dict[str, list[dict[str, Any]]] = {}
    for flag in document["flags"]:
        flags.setdefault(flag["node"], []).append(flag)
    reasons = {n["name"]: _reasons(n, flags.get(n["name"], [])) for n in document["nodes"]}
    holders: dict[str, list[str]] = {}
    for node in document["nodes"]:
        if not reasons[node["name"]]:
            holders.setdefault(node["sha256"], []).append(node["name"])
    for names in holders.values():
        for name in names if len(names) > 1 else ():
            others = [n for n in names if n != name]
            reasons[name].append(
                (
                    "same bundle as another node",
                    f"byte for byte the bundle of {', '.join(others[:3])}"
                    + (f" and {len(others) - 3} more" if len(others) > 3 else ""),
                )
            )
    healthy: dict[str, list[dict[str, Any]]] = {}
    left_out = []
    for node in document["nodes"]:
        found = reasons[node["name"]]
        if found:
            left_out.append(
                LeftOut(
                    node["name"],
                    node.get("sku"),
                    node["status"] == "ok",
                    found[0][0],
                    "; ".join(f"{reason}: {detail}" for reason, detail in found)[:600],
                )
            )
        else:
            healthy.setdefault(node["sku"], []).append(node)
    return Selection(dict(sorted(healthy.items())), left_out)


def of_sku(selection: Selection, sku: str) -> tuple[list[LeftOut], dict[str, int]]:
    """The nodes left out that are, or may be, of SKU (of it, among others of it, or not verified: SKU
    unknown), and how many nodes the other SKUs have: with SKU's healthy nodes, every node of the job."""
    mine: list[LeftOut] = []
    others: Counter[str] = Counter()
    for item in selection.left_out:
        if not item.verified or (item.sku and sku in item.sku.split("+")):
            mine.append(item)
        else:
            others[item.sku or fleet_analysis.NO_SKU] += 1
    for other, nodes in selection.healthy.items():
        if other != sku:
            others[other] += len(nodes)
    return mine, dict(sorted(others.items()))
