"""fleet.md and fleet.csv: the fleet document rendered for people (Jinja2 template in the package).

Only fleet.json goes in (no clock, no host lookups): the same document renders the same bytes.
At a thousand nodes the page stays short: the sick nodes first, one row per problem (failed,
rejected, acceptance failed, outlier), then each metric's statistics per SKU beside its
distribution plot; every node's row is in fleet.csv.
"""

from __future__ import annotations

import csv
import io
import shlex
from typing import Any

import jinja2

from harness.analysis.actions import Recommendation
from harness.escape import csv_cell
from harness.fleet import actions
from harness.fleet.node import not_accepted
from harness.present import templating

TEMPLATE = "fleet.md.j2"
MAX_SICK_ROWS = 300  # rows of the sick-node table in fleet.md; the rest are in fleet.csv and fleet.json
MAX_DETAILED = 50  # failed or rejected nodes shown with their log tail and failed checks
MAX_LEFT_OUT_ROWS = 100  # nodes left out of a baseline profile listed in fleet.md; all are in fleet.json
MAX_NAMED = 20  # a profile's input nodes named in fleet.md; all are in fleet.json
PROBLEM_ORDER = {"failed": 0, "rejected": 1, "acceptance failed": 2, "acceptance incomplete": 2, "outlier": 3}


def value_text(value: Any) -> str:
    """A table cell for a number, a missing figure, or an unavailable field (with its reason)."""
    if value is None or isinstance(value, jinja2.Undefined):
        return "-"
    if isinstance(value, dict) and "unavailable" in value:
        return f"unavailable: {value['unavailable']}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def sick_rows(document: dict[str, Any]) -> list[dict[str, str]]:
    """One row per problem of a node, with what to do about it: failed, rejected, acceptance failed,
    outlier; worst first."""
    rows = []
    for node in document["nodes"]:
        action = Recommendation.from_json(node["recommendation"]) if "recommendation" in node else None
        if node["status"] != "ok":
            rows.append(_row(node["name"], node["status"], node["why"], action))
        elif not_accepted(node):
            verdict = node["acceptance"]["verdict"]
            problem = f"acceptance {'failed' if verdict == 'fail' else verdict}"
            for failed in node["acceptance"].get("failed") or [
                {"name": "acceptance", "why": node["acceptance"].get("why")}
            ]:
                own = Recommendation.from_json(failed["action"]) if "action" in failed else None
                rows.append(_row(node["name"], problem, f"{failed['name']}: {failed['why']}", own))
    named = {node["name"]: node for node in document["nodes"]}
    for flag in document["flags"]:
        reason = f"{flag['metric']} = {value_text(flag['value'])}: {flag['why']}" + (
            f" [{flag['sku']}]" if flag["sku"] else ""
        )
        rows.append(_row(flag["node"], "outlier", reason, actions.for_flag(flag, named.get(flag["node"], {}))))
    return sorted(rows, key=lambda r: (PROBLEM_ORDER[r["problem"]], r["node"], r["reason"]))


def _row(node: str, problem: str, reason: str, action: Recommendation | None) -> dict[str, str]:
    return {"node": node, "problem": problem, "reason": reason, "action": action.shown() if action else ""}


def busy_nodes(document: dict[str, Any]) -> list[dict[str, str]]:
    """The nodes whose dossier ran on a busy host (harness.judge.contention.host_state), with what it said."""
    return [
        {"node": node["name"], "host": node["host_contention"]}
        for node in document["nodes"]
        if str(node.get("host_contention") or "").startswith("busy")
    ]


def _environment() -> jinja2.Environment:
    return templating.environment(jinja2.ChainableUndefined)


def render(document: dict[str, Any], plots: dict[str, list[str]]) -> str:
    """fleet.md; PLOTS maps a metric to its plot members (plots/METRIC.png, .svg)."""
    submission = document["job"]["submission"]
    sick = sick_rows(document)
    detailed = [n for n in document["nodes"] if n["status"] != "ok"]
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            job=document["job"],
            summary=document["summary"],
            nodes=document["nodes"],
            metrics=document["metrics"],
            table=document["table"],
            flags=document["flags"],
            rule=document["outlier_rule"],
            allreduce=document["allreduce"],
            sick=sick[:MAX_SICK_ROWS],
            sick_total=len(sick),
            sick_nodes=len({r["node"] for r in sick}),
            detailed=detailed[:MAX_DETAILED],
            detailed_total=len(detailed),
            plots=plots,
            value=value_text,
            baseline=document.get("baseline"),
            left_out=(document.get("baseline") or {}).get("left_out", [])[:MAX_LEFT_OUT_ROWS],
            max_named=MAX_NAMED,
            busy=busy_nodes(document),
            max_sick=MAX_SICK_ROWS,
            submit_command=shlex.join(submission.get("argv") or ["dossier", "fleet", "submit", "..."]),
        )
    )


def csv_text(document: dict[str, Any]) -> str:
    """Every node's row: status, SKU, verify, acceptance, flags and every compared figure."""
    metrics = list(document["metrics"])
    flagged: dict[str, list[str]] = {}
    for flag in document["flags"]:
        flagged.setdefault(flag["node"], []).append(flag["metric"])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "node",
            "status",
            "why",
            "sku",
            "verify_checks_failed",
            "acceptance",
            "acceptance_failed",
            "flagged",
            "action",
            "host_contention",
            *metrics,
        ]
    )
    for node in document["nodes"]:
        verify = node.get("verify") or {}
        acceptance = node["acceptance"]
        values = node.get("metrics") or {}
        text = [
            node["name"],
            node["status"],
            node.get("why") or "",
            node.get("sku") or "",
            verify.get("checks_failed", ""),
            acceptance["verdict"],
            " ".join(f["name"] for f in acceptance.get("failed") or []),
            " ".join(flagged.get(node["name"], [])),
            (node.get("recommendation") or {}).get("action", ""),
            node.get("host_contention") or "",
        ]
        writer.writerow([*map(csv_cell, text), *(_cell(values.get(m)) for m in metrics)])
    return out.getvalue()


def _cell(value: Any) -> str:
    """A figure's cell: a number as Python writes it (a spreadsheet reads it as a number), any other
    value as text that never starts a formula (harness.escape.csv_cell: OWASP)."""
    if value is None:
        return ""
    if isinstance(value, dict) and "unavailable" in value:
        return csv_cell(f"unavailable: {value['unavailable']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value) if isinstance(value, float) else str(value)
    return csv_cell(str(value))
