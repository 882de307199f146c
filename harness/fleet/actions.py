"""What to do about each sick node of a fleet collect (issue 39): its recommended action, the most
severe of its problems' (the first of equals), with the rule that chose it.

- a node that wrote no bundle, or whose bundle fails `dossier verify`: DRAIN (nothing it measured can
  be trusted or read; its log tail says why);
- a failed acceptance criterion: the criterion's own action (harness.judge.recommend);
- a figure far from the other nodes of its SKU: a rate by the one rate rule (harness.judge.recommend.rate,
  on what the node's bundle records beside it: a co-tenant says RERUN_IDLE, not an RMA), a count that
  should be zero (errors, remaps) RESET_GPU, a state unlike the other nodes' INSPECT_HARDWARE, a result
  digest unlike its stack's the corruption rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.analysis import actions
from harness.analysis.actions import Action, Recommendation
from harness.judge import action_words, recommend

NO_BUNDLE = Recommendation(
    Action.DRAIN,
    "fleet.no_bundle",
    "the node wrote no bundle (its log tail says why): take it out of service until it is looked at",
)
REJECTED = Recommendation(
    Action.DRAIN,
    "fleet.rejected",
    "the node's bundle fails `dossier verify` or could not be checked: nothing it measured can be trusted; take "
    "it out of service until it is looked at",
)
COUNT = Recommendation(
    Action.RESET_GPU,
    "fleet.count",
    "a count that should be zero (errors, remapped rows) is not, unlike the node's peers: reset the GPU and "
    "check again (dossier check); if it recurs, inspect the hardware",
)
STATE = Recommendation(
    Action.INSPECT_HARDWARE,
    "fleet.state",
    "the node reports a state unlike most nodes of its SKU (ECC mode, a link width): look at what differs",
)


def for_flag(flag: dict[str, Any], node: dict[str, Any]) -> Recommendation:
    """The action after one flagged figure of NODE."""
    kind = flag.get("kind")
    if kind == "count":
        return COUNT
    if kind == "state":
        return STATE
    if kind == "digest":
        return action_words.CORRUPTION
    found = node.get("conditions") or {}
    conditions = recommend.Conditions(tuple(found.get("disturbed") or ()), tuple(found.get("settings") or ()))
    return recommend.rate(f"{flag.get('metric')} (far from the other nodes of {flag.get('sku')})", conditions)


def for_node(node: dict[str, Any], flags: Iterable[dict[str, Any]]) -> Recommendation:
    """NODE's action: its status, its failed criteria, then its flagged figures (FLAGS: the fleet's)."""
    if node["status"] == "failed":
        return NO_BUNDLE
    if node["status"] != "ok":
        return REJECTED
    found = [Recommendation.from_json(f["action"]) for f in node["acceptance"].get("failed") or [] if "action" in f]
    found += [for_flag(flag, node) for flag in flags if flag["node"] == node["name"]]
    return actions.overall(found)


def with_actions(nodes: list[dict[str, Any]], flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every node with its recommendation."""
    return [{**node, "recommendation": for_node(node, flags).to_json()} for node in nodes]
