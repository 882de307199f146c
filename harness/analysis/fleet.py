"""Comparing the nodes of a fleet: the per-metric table and the outlier rule (standard library only).

A node "stands apart" on a rate (bandwidth, GEMM) when, compared with the OTHER nodes (leave
one out: a slow node must not drag its own reference towards itself, which matters most in a
small fleet, where one node moves the median absolute deviation), BOTH hold:

  * its ratio to the others' median is off 1 by more than RELATIVE_THRESHOLD (10 %): a
    difference too small to matter for a purchase is never flagged, however tight the others
    are; and
  * its robust z-score against the others, 0.6745 * (x - median_others) / MAD_others, exceeds
    ROBUST_Z_THRESHOLD (3.5, the modified z-score cut of Iglewicz and Hoaglin, 1993) in
    magnitude: a node is not flagged when the others are as scattered as it is. When MAD_others
    is 0 (the others agree exactly) the z-score is undefined and the relative test decides.

Both sides are flagged (a node far above the others is as suspicious as one far below). With
fewer than MIN_NODES measured nodes there is no majority to stand apart from: nothing is flagged
and the table says so.

ECC is a state, not a rate: a node is flagged when it reports any uncorrectable ECC error or any
pending or failed row remap (zero is the only acceptable count, as in `dossier accept`), or
when its ECC mode differs from the mode most nodes report.

`headlines(fleet_document)` recomputes the table from each node's raw metric values in the
document; `discrepancies(fleet_document)` names where the document's stated table differs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

RELATIVE_THRESHOLD = 0.10
ROBUST_Z_THRESHOLD = 3.5
MIN_NODES = 3
MAD_TO_Z = 0.6745  # the 0.75 quantile of the standard normal: makes MAD comparable to a sigma
ECC_COUNTERS = ("uncorrectable_errors", "pending_row_remaps", "failed_row_remaps")

RULE_TEXT = (f"rates, each node against the other nodes: flagged when |x/median_others - 1| > "
             f"{RELATIVE_THRESHOLD:g} and the robust z-score {MAD_TO_Z}*(x-median_others)/MAD_others "
             f"exceeds {ROBUST_Z_THRESHOLD:g} in magnitude (relative test alone when MAD_others = 0); "
             f"needs at least {MIN_NODES} measured nodes. ECC: flagged on any "
             "uncorrectable error or pending/failed row remap, or an ECC mode unlike most nodes'.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _round(value: float | None) -> float | None:
    """Stable, readable figures in the table (the raw values stay in each node's bundle)."""
    return None if value is None else round(value, 6)


def _judge(x: float, others: list[float], enough: bool) -> dict[str, Any]:
    """One node's row: its value against the others' median and MAD, and whether it stands apart."""
    if not others:
        return {"value": x, "ratio_to_others": None, "robust_z": None, "flagged": False}
    median = statistics.median(others)
    mad = statistics.median(abs(v - median) for v in others)
    ratio = x / median if median else None
    z = MAD_TO_Z * (x - median) / mad if mad else None
    far = ratio is not None and abs(ratio - 1) > RELATIVE_THRESHOLD
    flagged = enough and far and (z is None or abs(z) > ROBUST_Z_THRESHOLD)
    row = {"value": x, "ratio_to_others": _round(ratio), "robust_z": _round(z), "flagged": flagged}
    if flagged:
        side = "below" if x < median else "above"
        row["why"] = (f"{abs(ratio - 1) * 100:.1f} % {side} the other nodes' median"
                      + (f", robust z {z:+.1f}" if z is not None else ", the others agree exactly"))
    return row


def summarise_rate(values: Mapping[str, Any]) -> dict[str, Any]:
    """The table row set for one rate metric: `values` maps node -> number or {"unavailable": why}."""
    measured = {node: float(v) for node, v in values.items() if _is_number(v)}
    nodes: dict[str, Any] = {}
    if not measured:
        return {"measured_nodes": 0, "median": None, "minimum": None, "maximum": None, "spread": None,
                "mad": None, "note": "no node measured this metric",
                "nodes": {n: {"value": v, "flagged": False} for n, v in sorted(values.items())}}
    median = statistics.median(measured.values())
    mad = statistics.median(abs(x - median) for x in measured.values())
    enough = len(measured) >= MIN_NODES
    for node, value in sorted(values.items()):
        if node not in measured:
            nodes[node] = {"value": value, "flagged": False}
            continue
        nodes[node] = _judge(measured[node], [v for n, v in measured.items() if n != node], enough)
    summary = {"measured_nodes": len(measured), "median": _round(median),
               "minimum": _round(min(measured.values())), "maximum": _round(max(measured.values())),
               "spread": _round((max(measured.values()) - min(measured.values())) / median) if median else None,
               "mad": _round(mad), "nodes": nodes}
    if not enough:
        summary["note"] = f"outliers need at least {MIN_NODES} measured nodes; {len(measured)} measured"
    return summary


def summarise_ecc(values: Mapping[str, Any]) -> dict[str, Any]:
    """The rows for ECC state: `values` maps node -> {"mode", counters...} or {"unavailable": why}."""
    known = {n: v for n, v in values.items() if isinstance(v, dict) and "unavailable" not in v}
    modes = Counter(v.get("mode") for v in known.values() if v.get("mode") is not None)
    usual_mode = modes.most_common(1)[0][0] if modes else None
    tied = len(modes) > 1 and modes.most_common(2)[0][1] == modes.most_common(2)[1][1]
    nodes: dict[str, Any] = {}
    for node, value in sorted(values.items()):
        if node not in known:
            nodes[node] = {"value": value, "flagged": False}
            continue
        why = [f"{value[c]} {c.replace('_', ' ')}" for c in ECC_COUNTERS if _is_number(value.get(c)) and value[c] > 0]
        if value.get("mode") is not None and usual_mode is not None and not tied and value["mode"] != usual_mode:
            why.append(f"ECC mode {value['mode']!r} where most nodes report {usual_mode!r}")
        row = {"value": value, "flagged": bool(why)}
        if why:
            row["why"] = "; ".join(why)
        nodes[node] = row
    return {"measured_nodes": len(known), "usual_mode": usual_mode, "nodes": nodes}


def build_table(node_metrics: Mapping[str, Mapping[str, Any]], rate_metrics: list[str]) -> dict[str, Any]:
    """The whole per-metric table: `node_metrics` maps node -> metric name -> value."""
    table = {}
    for metric in rate_metrics:
        table[metric] = summarise_rate({n: m.get(metric, {"unavailable": "not extracted"})
                                        for n, m in node_metrics.items()})
    table["ecc"] = summarise_ecc({n: m.get("ecc", {"unavailable": "not extracted"})
                                  for n, m in node_metrics.items()})
    return table


def outliers(table: Mapping[str, Any]) -> dict[str, list[str]]:
    """metric -> the flagged nodes (only metrics with at least one)."""
    found = {metric: sorted(n for n, row in rows["nodes"].items() if row.get("flagged"))
             for metric, rows in table.items()}
    return {metric: nodes for metric, nodes in sorted(found.items()) if nodes}


def _measured_nodes(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {n["name"]: n.get("metrics", {}) for n in document.get("nodes", []) if n.get("metrics") is not None}


def headlines(document: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet table and its outliers, recomputed from each node's metric values."""
    rates = [m for m in document.get("table", {}) if m != "ecc"]
    table = build_table(_measured_nodes(document), rates)
    return {"table": table, "outliers": outliers(table)}


def discrepancies(document: Mapping[str, Any]) -> list[str]:
    """Where the document's stated table or outlier list differs from the recomputation."""
    found = []
    recomputed = headlines(document)
    stated = document.get("table", {})
    for metric, rows in recomputed["table"].items():
        if stated.get(metric) != rows:
            found.append(f"fleet table for {metric} differs from the recomputation from node values")
    if document.get("outliers") != recomputed["outliers"]:
        found.append(f"stated outliers {document.get('outliers')} differ from recomputed {recomputed['outliers']}")
    return found
