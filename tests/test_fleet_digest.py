"""Result digests across nodes (issue 25.5): a node whose stress GEMM digest differs from what most nodes
of its SKU and software stack report is named as possible silent data corruption; other stacks are
never compared with it. The digest itself is recorded by the stress probe from issue 24 on: the
committed H200 dossier (2026-12-01) predates it, so its node has none, and the digests below are
constructed values of the recorded form."""

from __future__ import annotations

import copy

from harness import registry
from harness.analysis import fleet
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.fleet.metrics import node_stack
from harness.registry.stress import RESULT_DIGEST, _result_digest
from tests.test_prometheus_exports import FULL

STACK = "driver 580.159.04, CUDA driver 13.0, torch 2.11.0+cu130, torch CUDA build 13.0"
OTHER_STACK = "driver 570.86.15, CUDA driver 12.8, torch 2.11.0+cu128, torch CUDA build 12.8"
GOOD, BAD = "bf16 GEMM of 2199023255552 FLOP: " + "a" * 64, "bf16 GEMM of 2199023255552 FLOP: " + "b" * 64


def table(values, stacks):
    nodes = {n: {"stress_result_digest": v} for n, v in values.items()}
    return fleet.build_table(nodes, {"stress_result_digest": fleet.DIGEST}, {n: "h200-sxm-141gb" for n in values},
                             stacks)["stress_result_digest"]["groups"]["h200-sxm-141gb"]


def test_a_node_unlike_its_stack_is_possible_silent_data_corruption():
    values = {"n1": GOOD, "n2": GOOD, "n3": BAD, "n4": GOOD, "n5": {"unavailable": "no stress step"}}
    rows = table(values, {n: STACK for n in values})
    assert [n for n, r in rows["nodes"].items() if r["flagged"]] == ["n3"]
    assert rows["nodes"]["n3"]["why"].startswith(f"possible silent data corruption: result digest {BAD} where 3 of 4")
    assert rows["stacks"][STACK] == {"usual": GOOD, "counts": {GOOD: 3, BAD: 1}, "measured_nodes": 4}


def test_other_software_stacks_are_never_compared():
    values = {"n1": GOOD, "n2": GOOD, "n3": GOOD, "n4": BAD, "n5": BAD, "n6": BAD}
    stacks = {"n1": STACK, "n2": STACK, "n3": STACK, "n4": OTHER_STACK, "n5": OTHER_STACK, "n6": OTHER_STACK}
    rows = table(values, stacks)
    assert not any(r["flagged"] for r in rows["nodes"].values())
    assert {s: v["usual"] for s, v in rows["stacks"].items()} == {STACK: GOOD, OTHER_STACK: BAD}


def test_too_few_nodes_or_a_tie_judges_nothing():
    few = table({"n1": GOOD, "n2": BAD}, {"n1": STACK, "n2": STACK})
    assert not any(r["flagged"] for r in few["nodes"].values()) and "at least 3" in few["stacks"][STACK]["note"]
    tie = table({"n1": GOOD, "n2": GOOD, "n3": BAD, "n4": BAD}, dict.fromkeys(["n1", "n2", "n3", "n4"], STACK))
    assert not any(r["flagged"] for r in tie["nodes"].values()) and "a tie" in tie["stacks"][STACK]["note"]


def test_the_fleet_document_recomputes_digest_flags_from_each_nodes_stack():
    values = {"n1": GOOD, "n2": GOOD, "n3": BAD}
    nodes = [{"name": n, "sku": "h200-sxm-141gb", "stack": STACK, "metrics": {"stress_result_digest": v}}
             for n, v in values.items()]
    metrics = {"stress_result_digest": {"kind": "digest"}}
    document = {"nodes": nodes, "metrics": metrics}
    recomputed = fleet.headlines({**document, "table": {"stress_result_digest": {}}})
    document.update(recomputed)
    assert fleet.discrepancies(document) == [] and recomputed["outliers"] == {"stress_result_digest": ["n3"]}
    document["nodes"][2]["stack"] = OTHER_STACK  # the stated table no longer follows from the nodes
    assert fleet.discrepancies(document)


def test_the_stress_document_s_digest_as_the_fleet_reads_it():
    view = BundleView.from_files(read_all(FULL), registry.analysis_module)
    document = view.documents["stress"]
    assert "issue 24" in _result_digest(document)["unavailable"]  # recorded before the probe kept one
    recorded = copy.deepcopy(document)
    recorded["devices"][0]["gemm"][RESULT_DIGEST] = "c" * 64
    assert _result_digest(recorded) == f"bf16 GEMM of {document['settings']['flop_per_gemm']} FLOP: " + "c" * 64
    recorded["devices"].append(copy.deepcopy(recorded["devices"][0]))
    recorded["devices"][1]["gemm"][RESULT_DIGEST] = "d" * 64
    assert "the node's GPUs disagree" in _result_digest(recorded)
    assert node_stack(view) == STACK  # what the H200's health recorded
