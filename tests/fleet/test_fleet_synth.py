"""bench/fleet_synth.py varies a node's figures consistently: each varied document passes its
schema and its analysis's recomputation (what `dossier verify` checks), for the steps the base
H200 bundle has and for the stress and transfer steps a base bundle will have once they are wired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import fleet_synth, fleet_vary
from harness.analysis import stress, transfer  # discrepancies: the figures' and the records' checks
from harness.analysis.bandwidth import figures as bandwidth
from harness.schemas import violations
from tests.transfer_fixtures import h200_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def base():
    return fleet_synth.Base.read(fleet_synth.H200_BASE)


def test_a_sick_node_s_documents_still_verify_and_carry_its_sickness(base):
    plan = fleet_synth.make_sick(fleet_synth.NodePlan("n1", hbm=1.01, gemm=0.99), "throttling")
    documents, carried = fleet_synth.varied_documents(base, plan)
    assert fleet_synth.check_documents(documents, base) == [] and carried == ["health", "precision", "allreduce"]
    slow = fleet_synth.varied_documents(base, fleet_synth.make_sick(fleet_synth.NodePlan("n2"), "slow-hbm"))[0]
    ratio = (
        bandwidth.headlines(slow["bandwidth"])["repeat_median_gbps"]
        / bandwidth.headlines(base.documents["bandwidth"])["repeat_median_gbps"]
    )
    assert ratio == pytest.approx(0.80)
    assert slow["roofline"]["roofs"]["bandwidth_gbps"] == float(f"{0.8 * 4272.851239561255:.6g}")


def test_stress_and_transfer_documents_are_varied_with_their_figures_recomputed():
    cpu = json.loads((FIXTURES / "stress" / "stress-cpu.json").read_text())
    slower = fleet_vary.vary_stress(cpu, 0.8)
    assert violations("stress", slower) == [] and stress.discrepancies(slower) == []
    assert stress.headlines(slower)["min_steady_tflops"] == pytest.approx(
        0.8 * stress.headlines(cpu)["min_steady_tflops"]
    )
    h200 = h200_document()
    halved = fleet_vary.vary_transfer(h200, 0.5)
    assert violations("transfer", halved) == [] and transfer.discrepancies(halved) == []
    before, after = transfer.headlines(h200)["series"], transfer.headlines(halved)["series"]
    some = next(sid for sid, s in before.items() if s["rate_gbps"])
    assert after[some]["rate_gbps"] == pytest.approx(0.5 * before[some]["rate_gbps"])
