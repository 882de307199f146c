"""Result digests across nodes (issue 25.5): a node whose stress GEMM digest differs from what most nodes
of its SKU and software stack report, for the same call, is named as possible silent data corruption;
other stacks and other calls are never compared with it. The digest is the one issue 24's stress probe
records (devices[].gemm.reference_digest): read here from a real CPU stress run taken by the test and
from the committed full H200 dossier (2026-12-01, recorded before digests existed, so it has none);
the digests of the table tests are constructed values of the form the fleet reads."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from harness import registry
from harness.analysis import fleet
from harness.analysis.stress.declared import result_digest as _result_digest
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.fleet.metrics import node_stack
from tests.commands.test_prometheus_exports import FULL

ROOT = Path(__file__).resolve().parents[2]
STACK = "driver 580.159.04, CUDA driver 13.0, torch 2.11.0+cu130, torch CUDA build 13.0"
OTHER_STACK = "driver 570.86.15, CUDA driver 12.8, torch 2.11.0+cu128, torch CUDA build 12.8"
CALL = "dtype bfloat16, shape [8192, 8192], seed 16, torch 2.11.0+cu130, cublas 13.1.0"
GOOD, BAD = f"{CALL} | " + "a" * 64, f"{CALL} | " + "b" * 64
GROUP, OTHER_GROUP = f"{STACK}; {CALL}", f"{OTHER_STACK}; {CALL}"  # the nodes a digest is compared with


def table(values, stacks):
    nodes = {n: {"stress_result_digest": v} for n, v in values.items()}
    return fleet.build_table(
        nodes, {"stress_result_digest": fleet.DIGEST}, dict.fromkeys(values, "h200-sxm-141gb"), stacks
    )["stress_result_digest"]["groups"]["h200-sxm-141gb"]


def test_a_node_unlike_its_stack_is_possible_silent_data_corruption():
    values = {"n1": GOOD, "n2": GOOD, "n3": BAD, "n4": GOOD, "n5": {"unavailable": "no stress step"}}
    rows = table(values, dict.fromkeys(values, STACK))
    assert [n for n, r in rows["nodes"].items() if r["flagged"]] == ["n3"]
    assert rows["nodes"]["n3"]["why"].startswith(f"possible silent data corruption: result digest {BAD} where 3 of 4")
    assert rows["stacks"][GROUP] == {"usual": GOOD, "counts": {GOOD: 3, BAD: 1}, "measured_nodes": 4}


def test_other_software_stacks_are_never_compared():
    values = {"n1": GOOD, "n2": GOOD, "n3": GOOD, "n4": BAD, "n5": BAD, "n6": BAD}
    stacks = {"n1": STACK, "n2": STACK, "n3": STACK, "n4": OTHER_STACK, "n5": OTHER_STACK, "n6": OTHER_STACK}
    rows = table(values, stacks)
    assert not any(r["flagged"] for r in rows["nodes"].values())
    assert {s: v["usual"] for s, v in rows["stacks"].items()} == {GROUP: GOOD, OTHER_GROUP: BAD}


def test_too_few_nodes_or_a_tie_judges_nothing():
    few = table({"n1": GOOD, "n2": BAD}, {"n1": STACK, "n2": STACK})
    assert not any(r["flagged"] for r in few["nodes"].values()) and "at least 3" in few["stacks"][GROUP]["note"]
    tie = table({"n1": GOOD, "n2": GOOD, "n3": BAD, "n4": BAD}, dict.fromkeys(["n1", "n2", "n3", "n4"], STACK))
    assert not any(r["flagged"] for r in tie["nodes"].values()) and "a tie" in tie["stacks"][GROUP]["note"]


def test_the_fleet_document_recomputes_digest_flags_from_each_nodes_stack():
    values = {"n1": GOOD, "n2": GOOD, "n3": BAD}
    nodes = [
        {"name": n, "sku": "h200-sxm-141gb", "stack": STACK, "metrics": {"stress_result_digest": v}}
        for n, v in values.items()
    ]
    metrics = {"stress_result_digest": {"kind": "digest"}}
    document = {"nodes": nodes, "metrics": metrics}
    recomputed = fleet.headlines({**document, "table": {"stress_result_digest": {}}})
    document.update(recomputed)
    assert fleet.discrepancies(document) == [] and recomputed["outliers"] == {"stress_result_digest": ["n3"]}
    document["nodes"][2]["stack"] = OTHER_STACK  # the stated table no longer follows from the nodes
    assert fleet.discrepancies(document)


def test_digests_of_another_call_are_not_compared():
    other_call = "dtype bfloat16, shape [4096, 4096], seed 16, torch 2.11.0+cu130, cublas 13.1.0 | " + "c" * 64
    values = {"n1": GOOD, "n2": GOOD, "n3": GOOD, "n4": other_call}  # n4 sized its GEMM smaller: another result
    rows = table(values, dict.fromkeys(values, STACK))
    assert not any(r["flagged"] for r in rows["nodes"].values())
    assert "at least 3" in rows["stacks"][f"{STACK}; {other_call.split(' | ')[0]}"]["note"]


def test_the_stress_documents_digest_as_the_fleet_reads_it():
    document = BundleView.from_files(read_all(FULL), registry.analysis_module).documents["stress"]
    assert "an older build" in _result_digest(document)["unavailable"]  # the H200 run predates the digest
    run = subprocess.run(
        [sys.executable, "-m", "harness.probes.stress", "--device", "cpu", "--seconds", "0.3", "--no-memory-test"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=300,
    )
    cpu = json.loads(run.stdout)
    record = cpu["devices"][0]["gemm"]["reference_digest"]
    value = _result_digest(cpu)
    conditions, digest = value.split(" | ")
    assert digest == record["sha256"] and conditions.startswith("dtype float32, shape [512, 512], seed 16, torch ")
    disagreeing = copy.deepcopy(cpu)
    disagreeing["devices"].append(copy.deepcopy(cpu["devices"][0]))
    disagreeing["devices"][1]["gemm"]["reference_digest"]["sha256"] = "d" * 64
    assert _result_digest(disagreeing) == f"{conditions} | the node's GPUs disagree: " + ", ".join(
        sorted([record["sha256"], "d" * 64])
    )


def test_a_nodes_software_stack_is_what_its_health_recorded():
    view = BundleView.from_files(read_all(FULL), registry.analysis_module)
    assert node_stack(view) == STACK  # what the H200's health recorded
