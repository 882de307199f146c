"""Real multi-GPU evidence: the all-reduce probe on two NVLink-connected H200s (tests/fixtures/h200x2/).

Taken 2026-11-29 on the `nvidia-h200-x2` device machine in one call:
`python3 -m harness.probes.health > health.json; OUT=$OUT bash bench/allreduce_vs_nccl_tests.sh`
(our probe at world size 2, normal and NCCL_P2P_DISABLE=1, then nccl-tests' all_reduce_perf -g 2,
NCCL_NVLS_ENABLE=0 throughout).
"""

import json
from pathlib import Path

import pytest

from harness.analysis import allreduce
from harness.analysis.health import figures as health
from harness.analysis.topology import gpu_pairs, parse_topo_matrix
from harness.schemas import violations
from tests.analysis.test_analysis_allreduce import independent_alpha_beta

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h200x2"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def test_documents_validate_and_recompute_without_discrepancy():
    assert violations("allreduce", load("allreduce.json")) == []
    assert violations("health", load("health.json")) == []
    assert allreduce.discrepancies(load("allreduce.json")) == []
    assert health.discrepancies(load("health.json")) == []


def test_both_curves_have_a_startup_to_bandwidth_knee():
    document = load("allreduce.json")
    curves = allreduce.headlines(document)["curves"]
    for name in ("normal", "p2p_disabled"):
        curve = curves[name]
        assert curve["alpha_us"] > 0 and curve["beta_gbps"] > 0
        points = sorted(next(r for r in document["runs"] if r["curve"] == name)["points"], key=lambda p: p["bytes"])
        # the same fit written another way, from the measured per-rank medians
        alpha, beta = independent_alpha_beta(
            [p["bytes"] for p in points], [max(p["rank_median_time_us"]) * 1e-6 for p in points]
        )
        assert curve["knee_bytes"] == pytest.approx(alpha * beta, rel=1e-9)
        # and what the knee means, in the measurements: a call there takes about twice the startup
        # time (interpolated between the sizes around it), and algbw reaches half its plateau near it
        below = [p for p in points if p["bytes"] <= curve["knee_bytes"]][-1]
        above = next(p for p in points if p["bytes"] > curve["knee_bytes"])
        at_knee = below["time_us"] + (above["time_us"] - below["time_us"]) * (
            (curve["knee_bytes"] - below["bytes"]) / (above["bytes"] - below["bytes"])
        )
        assert 0.75 < at_knee / (2 * curve["alpha_us"]) < 1.25
        assert 0.5 < curve["knee_bytes"] / curve["half_plateau_bytes"] < 2
    # NVLink's higher beta moves the knee to larger messages than the host-memory path
    assert curves["normal"]["knee_bytes"] > curves["p2p_disabled"]["knee_bytes"]


def test_the_gap_is_explained_by_the_nvlink_topology():
    document = load("allreduce.json")
    explanation = document["explanations"]["2"]
    assert explanation["explained"] and "NV18" in explanation["text"]
    gap = allreduce.headlines(document)["p2p_gap"]["2"]
    assert gap["busbw_ratio"] > 5  # NVLink against staging through host memory
    matrix = parse_topo_matrix((FIXTURES / "nvidia-smi-topo-m.txt").read_text())
    assert gpu_pairs(matrix, [0, 1]) == {"GPU0-GPU1": "NV18"}


def test_busbw_at_1_gib_is_within_5_percent_of_nccl_tests():
    ours = allreduce.headlines(load("allreduce.json"))["curves"]["normal"]["busbw_at_max_gbps"]
    row = next(
        line.split()
        for line in (FIXTURES / "all_reduce_perf.g2.txt").read_text().splitlines()
        if line.strip().startswith("1073741824")
    )
    theirs = float(row[7])  # out-of-place busbw column
    assert abs(ours / theirs - 1) < 0.05


def test_two_gpu_health_passes_its_nvlink_contract():
    contracts = {c["name"]: c["status"] for c in load("health.json")["contracts"]}
    assert contracts["nvlink_links_up"] == "pass"
    assert all(status != "fail" for status in contracts.values())


BUNDLE = FIXTURES / "dossier-h200x2.tar.gz"  # `OUT=$OUT bash bench/gpu_dossier.sh` on nvidia-h200-x2, 16:09 UTC


def test_the_two_gpu_dossier_verifies_and_passes_every_acceptance_criterion(tmp_path):
    from harness.cli import main

    format_1 = ["--allow-format", "1"]  # its report.md is format 1's: not re-rendered here
    assert main(["verify", str(BUNDLE), "--key", str(FIXTURES / "dossier-h200x2.pub"), *format_1]) == 0
    junit = tmp_path / "accept.xml"
    assert (
        main(
            [
                "accept",
                str(BUNDLE),
                "--profile",
                "h200-sxm-141gb",
                "--key",
                str(FIXTURES / "dossier-h200x2.pub"),
                "--signing-key",
                str(tmp_path / "acceptor.key"),
                "--junit",
                str(junit),
                *format_1,
            ]
        )
        == 0
    )
    text = junit.read_text()
    assert 'failures="0"' in text and 'name="allreduce_busbw"' in text
    # made before the stress and transfer steps existed (issues 16, 17): only criteria of steps it lacks are not measured
    import xml.etree.ElementTree as ET

    skipped = {
        case.get("name"): case.find("skipped")
        for case in ET.fromstring(text).iter("testcase")
        if case.find("skipped") is not None
    }
    transfer = {
        "transfer_links",
        "transfer_h2d_pinned",
        "transfer_d2h_pinned",
        "transfer_bidirectional_pinned",
        "stress_sustained_bf16",
        "stress_duration",
    }
    assert transfer <= set(skipped)
    assert all("the bundle has no" in ET.tostring(skipped[name], encoding="unicode") for name in transfer)
