"""What `dossier fleet collect` recommends for each sick node (harness/fleet/actions.py, issue 39): its
status first, then its failed criteria's own actions, then its outliers by kind; a slow rate beside a
co-tenant the node's bundle recorded says RERUN_IDLE, the same rate on a quiet node INSPECT_HARDWARE.
The node records are fleet.json's (schemas/fleet.schema.json), the flags analysis.fleet's shape; the
co-tenant's words are the ones the committed h200-contended dossier gives (pid 1698, python3)."""

from __future__ import annotations

from harness.analysis.actions import Action
from harness.fleet import actions
from harness.fleet.report import sick_rows

RESET = {"action": "RESET_GPU", "rule": "row_remaps.pending", "why": "a row remap waits for a GPU reset"}


def node(name, status="ok", failed=(), disturbed=(), settings=()):
    return {
        "name": name,
        "status": status,
        "why": "" if status == "ok" else "its bundle fails `dossier verify`: FAIL signature",
        "acceptance": {"verdict": "fail" if failed else "pass", "failed": list(failed)},
        "conditions": {"disturbed": list(disturbed), "settings": list(settings)},
    }


def flag(name, kind="rate", metric="bandwidth_plateau_gbps"):
    return {
        "node": name,
        "metric": metric,
        "kind": kind,
        "sku": "h200-sxm-141gb",
        "value": 1889.8,
        "median_others": 4232.0,
        "mads_away": -40.0,
        "why": "0.45 of the other nodes' median",
    }


def test_a_slow_node_beside_a_co_tenant_reruns_and_a_quiet_one_is_inspected():
    shared = node("n1", disturbed=["GPU0 pid 1698 (python3)"])
    quiet = node("n2")
    capped = node("n3", settings=["health GPU0 enforced power limit 600 W below default 700 W"])
    assert actions.for_node(shared, [flag("n1")]).action == Action.RERUN_IDLE
    assert actions.for_node(quiet, [flag("n2")]).action == Action.INSPECT_HARDWARE
    assert actions.for_node(capped, [flag("n3")]).action == Action.RECONFIGURE
    assert actions.for_node(quiet, [flag("n2", kind="count", metric="ecc_uncorrectable_errors")]).rule == "fleet.count"
    assert actions.for_node(quiet, []).action == Action.NONE


def test_status_comes_first_and_a_failed_criterion_brings_its_own_action():
    assert actions.for_node(node("n4", status="failed"), [flag("n4")]).rule == "fleet.no_bundle"
    assert actions.for_node(node("n5", status="rejected"), []).rule == "fleet.rejected"
    remap = node(
        "n6", failed=[{"name": "row_remaps_clean", "why": "health: GPU0 remap pending: True", "action": RESET}]
    )
    assert actions.for_node(remap, [flag("n6", kind="state", metric="ecc_mode")]).action == Action.INSPECT_HARDWARE
    assert actions.for_node(remap, []).rule == "row_remaps.pending"


def test_the_sick_rows_carry_each_problems_action():
    nodes = actions.with_actions([node("n1", disturbed=["GPU0 pid 1698 (python3)"]), node("n5", status="rejected")], [])
    document = {"nodes": nodes, "flags": [flag("n1")]}
    rows = {(r["node"], r["problem"]): r["action"] for r in sick_rows(document)}
    assert rows[("n5", "rejected")] == "DRAIN (fleet.rejected)"
    assert rows[("n1", "outlier")] == "RERUN_IDLE (rate.disturbed)"
