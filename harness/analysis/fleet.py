"""Comparing the nodes of a fleet: the per-metric, per-SKU table and the outlier rules (standard library only).

Nodes are compared only with nodes of the same SKU (the catalogue SKU health identified; nodes
with none, or several, form their own group). Each metric has a kind (its registry entry says,
harness/registry/spec.py FleetMetric):

* rate: a node "stands apart" when, compared with the OTHER nodes of its SKU (leave one out: a
  slow node must not drag its own reference towards itself, which matters most in a small
  fleet), BOTH hold:

  * its ratio to the others' median is off 1 by more than RELATIVE_THRESHOLD (10 %): a
    difference too small to matter for a purchase is never flagged, however tight the others
    are; and
  * its robust z-score against the others, 0.6745 * (x - median_others) / MAD_others, exceeds
    ROBUST_Z_THRESHOLD (3.5, the modified z-score cut of Iglewicz and Hoaglin, 1993) in
    magnitude: a node is not flagged when the others are as scattered as it is. When MAD_others
    is 0 (the others agree exactly) the z-score is undefined and the relative test decides.

  Both sides are flagged. With fewer than MIN_NODES measured nodes in the group nothing is
  flagged and the table says so. The leave-one-out medians and MADs of all n nodes take
  O(n log n) (`leave_one_out`), the same numbers `statistics.median` gives node by node.
* count: zero is the only good value (uncorrectable ECC errors, row remaps, result errors, XID
  events): any node above zero is flagged.
* state: a node is flagged when its value differs from the one most nodes of its SKU report
  (ECC mode, PCIe link width under load); a tie names no usual value and flags nothing.
* digest: a result's digest (the stress GEMM's output, same inputs and seed) compared within the
  nodes of one SKU AND one software stack (driver, torch and its CUDA build: other libraries may
  round differently and are not compared) AND the conditions the value names before " | " (dtype,
  shape, seed, cuBLAS: only the same call compares): a node whose digest differs from the one most of them
  report is flagged as possible silent data corruption, even when it agrees with itself. With
  fewer than MIN_NODES measured nodes in a stack, or a tie, nothing is flagged and the group says so.

`headlines(fleet_document)` recomputes the table from each node's values and SKU in the
document; `discrepancies(fleet_document)` names where the document's stated table differs.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from harness.analysis.units import is_number

RELATIVE_THRESHOLD = 0.10
ROBUST_Z_THRESHOLD = 3.5
MIN_NODES = 3
MAD_TO_Z = 0.6745  # the 0.75 quantile of the standard normal: makes MAD comparable to a sigma
RATE, COUNT, STATE, DIGEST = "rate", "count", "state", "digest"
NO_SKU = "no catalogue SKU"
NO_STACK = "software stack unknown"

RULE_TEXT = (
    f"nodes are compared within their SKU. Rates, each node against the other nodes: flagged when "
    f"|x/median_others - 1| > {RELATIVE_THRESHOLD:g} and the robust z-score "
    f"{MAD_TO_Z}*(x-median_others)/MAD_others exceeds {ROBUST_Z_THRESHOLD:g} in magnitude (relative "
    f"test alone when MAD_others = 0); needs at least {MIN_NODES} measured nodes. Counts (errors, "
    "remaps, events): flagged above 0. States (ECC mode, link width): flagged when unlike most nodes'. "
    f"Digests (a result computed from the same inputs): compared within one SKU and software stack, "
    f"flagged when unlike most nodes' (at least {MIN_NODES} measured): possible silent data corruption."
)


def _round(value: float | None) -> float | None:
    """Stable, readable figures in the table (the raw values stay in each node's bundle)."""
    return None if value is None else round(value, 6)


def _median_sorted(ordered: list[float], skip: int | None = None) -> float:
    """The median of ORDERED (sorted) without the element at index SKIP, as statistics.median gives it."""
    n = len(ordered) - (skip is not None)

    def at(rank: int) -> float:
        return ordered[rank if skip is None or rank < skip else rank + 1]

    if n % 2:
        return at(n // 2)
    return (at(n // 2 - 1) + at(n // 2)) / 2


def leave_one_out(values: list[float]) -> list[tuple[float, float]]:
    """(median of the others, MAD of the others about that median) for every value, in order."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ordered = [values[i] for i in order]
    deviations: dict[float, list[float]] = {}
    result: list[tuple[float, float]] = [(0.0, 0.0)] * len(values)
    for position, index in enumerate(order):
        median = _median_sorted(ordered, position)
        if median not in deviations:  # at most three distinct medians: below, at and above the middle
            deviations[median] = sorted(abs(v - median) for v in ordered)
        spread = deviations[median]
        own = bisect.bisect_left(spread, abs(values[index] - median))
        result[index] = (median, _median_sorted(spread, own))
    return result


def _judge(x: float, median: float, mad: float, enough: bool) -> dict[str, Any]:
    """One node's row: its value against the others' median and MAD, and whether it stands apart."""
    ratio = x / median if median else None
    z = MAD_TO_Z * (x - median) / mad if mad else None
    far = ratio is not None and abs(ratio - 1) > RELATIVE_THRESHOLD
    flagged = enough and far and (z is None or abs(z) > ROBUST_Z_THRESHOLD)
    row: dict[str, Any] = {
        "value": x,
        "median_others": _round(median),
        "ratio_to_others": _round(ratio),
        "mads_away": _round((x - median) / mad) if mad else None,
        "robust_z": _round(z),
        "flagged": flagged,
    }
    if flagged and ratio is not None:  # (flagged only with a ratio)
        side = "below" if x < median else "above"
        row["why"] = f"{abs(ratio - 1) * 100:.1f} % {side} the other nodes' median {median:.4g}" + (
            f", {abs(x - median) / mad:.1f} MADs away (robust z {z:+.1f})"
            if z is not None
            else ", the others agree exactly"
        )
    return row


def summarise_rate(values: Mapping[str, Any]) -> dict[str, Any]:
    """The rows for one rate in one group: `values` maps node -> number or {"unavailable": why}."""
    measured = {node: float(v) for node, v in values.items() if is_number(v)}
    if not measured:
        return {
            "measured_nodes": 0,
            "median": None,
            "minimum": None,
            "maximum": None,
            "spread": None,
            "mad": None,
            "note": "no node measured this metric",
            "nodes": {n: {"value": v, "flagged": False} for n, v in sorted(values.items())},
        }
    names = sorted(measured)
    numbers = [measured[n] for n in names]
    ordered = sorted(numbers)
    median = _median_sorted(ordered)
    mad = _median_sorted(sorted(abs(x - median) for x in numbers))
    enough = len(measured) >= MIN_NODES
    others = dict(zip(names, leave_one_out(numbers), strict=True)) if len(numbers) > 1 else {}
    nodes: dict[str, Any] = {}
    for node, value in sorted(values.items()):
        if node not in measured:
            nodes[node] = {"value": value, "flagged": False}
        elif node not in others:
            nodes[node] = {
                "value": measured[node],
                "median_others": None,
                "ratio_to_others": None,
                "mads_away": None,
                "robust_z": None,
                "flagged": False,
            }
        else:
            nodes[node] = _judge(measured[node], *others[node], enough)
    summary: dict[str, Any] = {
        "measured_nodes": len(measured),
        "median": _round(median),
        "minimum": _round(ordered[0]),
        "maximum": _round(ordered[-1]),
        "spread": _round((ordered[-1] - ordered[0]) / median) if median else None,
        "mad": _round(mad),
        "nodes": nodes,
    }
    if not enough:
        summary["note"] = f"outliers need at least {MIN_NODES} measured nodes; {len(measured)} measured"
    return summary


def summarise_count(values: Mapping[str, Any]) -> dict[str, Any]:
    """The rows for a count that must be zero: any node above zero is flagged."""
    nodes: dict[str, Any] = {}
    for node, value in sorted(values.items()):
        flagged = is_number(value) and value > 0
        nodes[node] = {
            "value": value,
            "flagged": flagged,
            **({"why": f"{value:g}, where 0 is the only good count"} if flagged else {}),
        }
    return {
        "measured_nodes": sum(is_number(v) for v in values.values()),
        "total": sum(v for v in values.values() if is_number(v)),
        "nodes": nodes,
    }


def summarise_state(values: Mapping[str, Any]) -> dict[str, Any]:
    """The rows for a state: a node unlike what most nodes report is flagged (a tie flags none)."""
    known = {n: v for n, v in values.items() if isinstance(v, (str, int, float, bool)) and v is not None}
    counts = Counter(str(v) for v in known.values())
    top = counts.most_common(2)
    usual = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
    nodes: dict[str, Any] = {}
    for node, value in sorted(values.items()):
        flagged = node in known and usual is not None and str(value) != usual
        nodes[node] = {
            "value": value,
            "flagged": flagged,
            **(
                {"why": f"{value} where most nodes report {usual} ({counts[usual]} of {len(known)})"}
                if flagged and usual is not None
                else {}
            ),
        }  # (flagged only with a usual value)
    return {"measured_nodes": len(known), "usual": usual, "counts": dict(sorted(counts.items())), "nodes": nodes}


DIGEST_CONDITIONS = " | "  # a digest value "CONDITIONS | DIGEST": what the bits hold for, then the digest


def _digest_group(stack: str | None, value: str) -> str:
    """The nodes a digest is compared with: one software stack, and the conditions the value names."""
    conditions = value.rsplit(DIGEST_CONDITIONS, 1)[0] if DIGEST_CONDITIONS in value else ""
    return (stack or NO_STACK) + (f"; {conditions}" if conditions else "")


def summarise_digest(values: Mapping[str, Any], stacks: Mapping[str, str | None]) -> dict[str, Any]:
    """The rows for a digest: within each software stack, a node unlike what most report is flagged
    (possible silent data corruption); fewer than MIN_NODES measured in a stack, or a tie, flags none."""
    known = {n: v for n, v in values.items() if isinstance(v, str)}
    by_stack: dict[str, dict[str, str]] = defaultdict(dict)
    for node, value in known.items():
        by_stack[_digest_group(stacks.get(node), value)][node] = value
    summary_of: dict[str, Any] = {}
    usual_of: dict[str, str | None] = {}
    for stack, digests in sorted(by_stack.items()):
        counts = Counter(digests.values())
        top = counts.most_common(2)
        clear = len(top) == 1 or top[0][1] > top[1][1]
        usual_of[stack] = top[0][0] if clear and len(digests) >= MIN_NODES else None
        summary_of[stack] = {
            "usual": usual_of[stack],
            "counts": dict(sorted(counts.items())),
            "measured_nodes": len(digests),
        }
        if len(digests) < MIN_NODES:
            summary_of[stack]["note"] = (
                f"needs at least {MIN_NODES} measured nodes of this stack; {len(digests)} measured"
            )
        elif not clear:
            summary_of[stack]["note"] = "no digest is reported by most nodes (a tie): none is judged"
    nodes: dict[str, Any] = {}
    for node, value in sorted(values.items()):
        stack = _digest_group(stacks.get(node), value) if isinstance(value, str) else NO_STACK
        usual = usual_of.get(stack)
        flagged = node in known and usual is not None and value != usual
        nodes[node] = {"value": value, "flagged": flagged}
        if flagged:
            agree = summary_of[stack]["counts"][usual]
            nodes[node]["why"] = (
                f"possible silent data corruption: result digest {value} where {agree} of "
                f"{summary_of[stack]['measured_nodes']} nodes of this SKU and stack ({stack}) report "
                f"{usual}"
            )
    return {"measured_nodes": len(known), "stacks": summary_of, "nodes": nodes}


SUMMARISE = {RATE: summarise_rate, COUNT: summarise_count, STATE: summarise_state}


def build_table(
    node_metrics: Mapping[str, Mapping[str, Any]],
    metrics: Mapping[str, str],
    skus: Mapping[str, str | None],
    stacks: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """metric -> {kind, groups: SKU -> rows}: `node_metrics` maps node -> metric -> value, `metrics`
    metric -> kind, `skus` node -> its SKU group, `stacks` node -> its software stack (digests only)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for node in sorted(node_metrics):
        groups[skus.get(node) or NO_SKU].append(node)

    def rows(metric: str, kind: str, nodes: list[str]) -> dict[str, Any]:
        values = {n: node_metrics[n].get(metric, {"unavailable": "not extracted"}) for n in nodes}
        return summarise_digest(values, stacks or {}) if kind == DIGEST else SUMMARISE[kind](values)

    table = {}
    for metric, kind in metrics.items():
        table[metric] = {
            "kind": kind,
            "groups": {sku: rows(metric, kind, nodes) for sku, nodes in sorted(groups.items())},
        }
    return table


def flags(table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every flagged (node, metric): its SKU group, value, the others' median, MADs away and why."""
    found = []
    for metric, entry in table.items():
        for sku, rows in entry["groups"].items():
            for node, row in rows["nodes"].items():
                if row.get("flagged"):
                    found.append(
                        {
                            "node": node,
                            "metric": metric,
                            "kind": entry["kind"],
                            "sku": sku,
                            "value": row["value"],
                            "median_others": row.get("median_others"),
                            "mads_away": row.get("mads_away"),
                            "why": row.get("why"),
                        }
                    )
    return sorted(found, key=lambda f: (f["node"], f["metric"]))


def outliers(table: Mapping[str, Any]) -> dict[str, list[str]]:
    """metric -> the flagged nodes (only metrics with at least one)."""
    found: dict[str, list[str]] = defaultdict(list)
    for flag in flags(table):
        found[flag["metric"]].append(flag["node"])
    return {metric: sorted(nodes) for metric, nodes in sorted(found.items())}


def _measured_nodes(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {n["name"]: n.get("metrics", {}) for n in document.get("nodes", []) if n.get("metrics") is not None}


def headlines(document: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet table, its flags and outliers, recomputed from each node's metric values and SKU."""
    kinds = {m: (document.get("metrics", {}).get(m) or {}).get("kind", RATE) for m in document.get("table", {})}
    skus = {n["name"]: n.get("sku") for n in document.get("nodes", [])}
    stacks = {n["name"]: n.get("stack") for n in document.get("nodes", [])}
    table = build_table(_measured_nodes(document), kinds, skus, stacks)
    return {"table": table, "flags": flags(table), "outliers": outliers(table)}


def discrepancies(document: Mapping[str, Any]) -> list[str]:
    """Where the document's stated table, flags or outlier list differ from the recomputation."""
    found = []
    recomputed = headlines(document)
    stated = document.get("table", {})
    for metric, rows in recomputed["table"].items():
        if stated.get(metric) != rows:
            found.append(f"fleet table for {metric} differs from the recomputation from node values")
    for key in ("flags", "outliers"):
        if document.get(key) != recomputed[key]:
            found.append(f"stated {key} differ from the recomputation from node values")
    return found
