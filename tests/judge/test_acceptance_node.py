"""GPU against GPU within one node (harness.judge.acceptance.node): a GPU short of its neighbours is
named even when every GPU clears the SKU's floor.

No multi-GPU stress or transfer run exists yet (the two-GPU machine was withheld when they were
taken), so the two-GPU documents are CONSTRUCTED: the stress run is the real one-GPU H200 run
(tests/fixtures/h200/stress-bf16.json) copied to a second GPU, and the transfer document is the one
tests/transfer_fixtures.py builds from the two H200s' captures with nvbandwidth's figures, given
three sizes at the same rate (as tests/judge/test_transfer_accept.py's three_sizes). Where one GPU is
made slower, the test says by how much (EDITED)."""

import copy
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from harness.probes.transfer.copies import point
from harness.probes.transfer.document import state_figures
from tests.accept_support import apply_file, h200_documents, resolve, view_of
from tests.analysis.test_stress_analysis import restate
from tests.transfer_fixtures import FIXTURES as TRANSFER_FIXTURES
from tests.transfer_fixtures import two_gpu_document

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h200"
SXM = "h200-sxm-141gb"
NV18 = TRANSFER_FIXTURES / "h200x2" / "nvidia-smi-topo-m.txt"
NODE = (
    "gpu_vs_node_device_local_copy",
    "gpu_vs_node_sustained_gemm",
    "gpu_vs_node_power",
    "gpu_vs_node_h2d_pinned",
    "gpu_vs_node_d2h_pinned",
)


def two_gpu_stress(gpu1_rate=1.0) -> dict:
    document = json.loads((FIXTURES / "stress-bf16.json").read_text())
    second = copy.deepcopy(document["devices"][0])
    second["index"], second["uuid"] = 1, "GPU-00000001-test"
    for bucket in second["gemm"]["buckets"]:
        bucket["gemm_ms"] = [ms / gpu1_rate for ms in bucket["gemm_ms"]]
    document["devices"].append(second)
    return restate(document)


def two_gpu_transfer(gpu1_h2d_rate=1.0) -> dict:
    document = json.loads(json.dumps(two_gpu_document(NV18, access=True, with_peer_copies=True)))
    for series in document["series"]:
        [recorded] = series["points"]
        slower = (
            1 / gpu1_h2d_rate
            if series.get("gpu") == 1
            and series.get("direction") == "host_to_device"
            and series.get("concurrency") == "alone"
            else 1.0
        )
        per_byte = recorded["copy_times_s"][0] / recorded["bytes"] * slower
        series["points"] = [point(n, [n * per_byte]) for n in (2**28, 2**29, 2**30)]
    return state_figures(document)


def judged(stress=None, transfer=None, profile=None):
    documents = {
        **h200_documents(),
        **({"stress": stress} if stress else {}),
        **({"transfer": transfer} if transfer else {}),
    }
    return {
        r.name: r
        for r in evaluate(BundleFacts(view_of(documents)), profile or resolve(SXM), CRITERIA)
        if r.name in NODE
    }


def test_two_gpus_that_measure_alike_pass():
    results = judged(two_gpu_stress(), two_gpu_transfer())
    for name in ("gpu_vs_node_sustained_gemm", "gpu_vs_node_power", "gpu_vs_node_h2d_pinned", "gpu_vs_node_d2h_pinned"):
        assert results[name].status == Verdict.PASS, (name, results[name].why)
    assert results["gpu_vs_node_sustained_gemm"].threshold.value == pytest.approx(0.95)  # the catalogue's 5%


def test_a_gpu_fifteen_percent_slower_than_its_neighbour_is_named():
    # EDITED: GPU1 GEMMs 1/0.85 longer; with two GPUs the median is their midpoint, so GPU1 is at 0.85/0.925
    row = judged(two_gpu_stress(gpu1_rate=0.85))["gpu_vs_node_sustained_gemm"]
    assert row.status == Verdict.FAIL
    assert row.why.startswith("GPU1 ") and "of the node median" in row.why and "GPU0" not in row.why
    assert row.measured.value < 0.95


def test_a_slow_host_link_on_one_gpu_is_named():
    row = judged(transfer=two_gpu_transfer(gpu1_h2d_rate=0.8))["gpu_vs_node_h2d_pinned"]  # EDITED: GPU1 x0.8
    assert row.status == Verdict.FAIL and row.why.startswith("GPU1 ")


def test_one_gpu_has_nothing_to_compare_with():
    stress = json.loads((FIXTURES / "stress-bf16.json").read_text())
    row = judged(stress)["gpu_vs_node_sustained_gemm"]
    assert row.status == Verdict.SKIP and "nothing to compare it with" in row.why


def test_a_tighter_profile_tolerance_is_applied():
    profile = apply_file(resolve(SXM), {"sku_id": SXM, "thresholds": {"gpu_vs_node_tolerance": 0.01}}, "test")
    row = judged(two_gpu_stress(gpu1_rate=0.97), profile=profile)["gpu_vs_node_sustained_gemm"]  # EDITED: x0.97
    assert row.status == Verdict.FAIL and "under 99%" in row.why
