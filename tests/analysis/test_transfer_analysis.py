"""Transfer analysis on documents built from real captures (tests/transfer_fixtures.py): link ceilings
and ratios, the degraded-link rule (a capture EDITED to a x8 link), the broken-P2P rule on real
`nvidia-smi topo -m` outputs with NV# links, and tamper detection."""

import json

import pytest

from harness.analysis.allreduce.gap import PCIE_LANE_GBPS
from harness.analysis.transfer import discrepancies, headlines, links
from harness.probes.transfer.document import state_figures
from harness.schemas import violations
from tests.transfer_fixtures import EDITED_X8, FIXTURES, h200_document, nvbandwidth_table, two_gpu_document

GEN5_X16 = PCIE_LANE_GBPS[5] * 16
H200X2_TOPO = FIXTURES / "h200x2" / "nvidia-smi-topo-m.txt"
H100X8_TOPO = FIXTURES / "allreduce" / "nvidia-smi-topo-m.8xh100-nv18.txt"
PHB_TOPO = FIXTURES / "allreduce" / "nvidia-smi-topo-m.2x5090-phb.txt"


def test_h200_figures_stand_beside_gen5_x16_with_the_ratio_explained():
    document = h200_document()
    assert violations("transfer", document) == [] and discrepancies(document) == []
    series = {s["id"]: s for s in document["series"]}
    h2d = series["gpu0/h2d/pinned"]["link"]
    assert h2d["kind"] == "pcie" and h2d["ceiling_gbps"] == pytest.approx(GEN5_X16)
    assert h2d["ratio"] == pytest.approx(nvbandwidth_table()["host_to_device_memcpy_ce"][0] / GEN5_X16)
    assert "128b/130b" in h2d["explanation"] and "64.0 GB/s raw" in h2d["explanation"]
    local = series["gpu0/local"]["link"]
    assert local["kind"] == "device_memory" and local["ceiling_gbps"] == 2400


def test_the_real_h200_capture_passes_the_link_rule():
    [check] = h200_document()["link_checks"]
    assert check["status"] == "ok" and check["ceiling_gbps"] == pytest.approx(GEN5_X16)


def test_a_capture_edited_to_x8_is_a_degraded_link_with_the_reason():
    document = h200_document(under_copy=EDITED_X8)
    assert violations("transfer", document) == [] and discrepancies(document) == []
    [check] = document["link_checks"]
    assert check["status"] == "degraded"
    assert check["ceiling_gbps"] == pytest.approx(PCIE_LANE_GBPS[5] * 8)
    assert any("x8 of its x16" in reason for reason in check["reasons"])
    assert any("exceeds" in reason for reason in check["reasons"])  # 55 GB/s cannot cross a x8 link


def test_a_rate_far_under_an_unchanged_x16_report_is_degraded():
    """Constructed: the real capture's link (Gen5 x16) with every copy taking twice as long, which
    is what a link running at half its lanes while reporting all of them delivers."""
    document = h200_document()
    for series in document["series"]:
        for point in series["points"]:
            point["copy_times_s"] = [2 * t for t in point["copy_times_s"]]
    [check] = state_figures(document)["link_checks"]
    assert check["status"] == "degraded"
    assert any("slower than the reported link" in reason and "< 0.6" in reason for reason in check["reasons"])


def test_stated_link_verdicts_are_recomputed():
    document = h200_document(under_copy=EDITED_X8)
    document["link_checks"][0]["status"] = "ok"
    assert any("link_checks[0] status: states ok, recomputed degraded" in line for line in discrepancies(document))


def test_two_nvlinked_h200s_with_peer_access_are_ok_and_measured_against_nvlink():
    document = two_gpu_document(H200X2_TOPO, access=True, with_peer_copies=True)
    assert violations("transfer", document) == [] and discrepancies(document) == []
    [check] = document["p2p_checks"]
    assert check == {
        "pair": "GPU0-GPU1",
        "cell": "NV18",
        "status": "ok",
        "reasons": ["NV18; peer access granted both ways"],
    }
    peer = headlines(document)["peer"]
    write = peer["write"]["0->1"]
    assert write["link_kind"] == "nvlink" and write["ceiling_gbps"] == 18 * 25.0
    assert write["rate_gbps"] == pytest.approx(nvbandwidth_table()["device_to_device_memcpy_write_ce"][0])
    assert write["plateau_gbps"] is None  # one size recorded: no plateau is claimed


@pytest.mark.parametrize("topo", [H200X2_TOPO, H100X8_TOPO], ids=["h200x2-NV18", "8xh100-NV18"])
def test_refused_peer_access_on_an_nvlink_topology_is_broken_p2p(topo):
    document = two_gpu_document(topo, access=False, with_peer_copies=False)
    assert violations("transfer", document) == [] and discrepancies(document) == []
    [check] = document["p2p_checks"]
    assert check["status"] == "broken_p2p" and check["cell"] == "NV18"
    assert "cudaDeviceCanAccessPeer says no for 0 to 1, although nvidia-smi topo -m reports NV18" in check["reasons"][0]


def test_one_refused_direction_is_enough_to_be_broken():
    document = two_gpu_document(H200X2_TOPO, access={"0->1": True, "1->0": False}, with_peer_copies=False)
    [check] = document["p2p_checks"]
    assert check["status"] == "broken_p2p" and len(check["reasons"]) == 1 and "1 to 0" in check["reasons"][0]


def test_nvml_reporting_nvlink_p2p_not_ok_on_nv18_is_broken():
    document = two_gpu_document(
        H200X2_TOPO,
        access=True,
        with_peer_copies=True,
        nvml_p2p={"GPU0-GPU1": {"nvlink": "not_supported", "read": "ok"}},
    )
    [check] = document["p2p_checks"]
    assert check["status"] == "broken_p2p" and "NVLink P2P status is not_supported" in check["reasons"][0]


def test_refused_peer_access_over_pcie_is_recorded_but_not_broken():
    document = two_gpu_document(PHB_TOPO, access=False, with_peer_copies=False)
    [check] = document["p2p_checks"]
    assert check["status"] == "no_p2p" and check["cell"] == "PHB"


def test_peer_copies_at_pcie_speed_on_nv18_are_a_degraded_nvlink():
    """Constructed: the real two-GPU facts with peer copies ten times slower than nvbandwidth measured."""
    document = two_gpu_document(H200X2_TOPO, access=True, with_peer_copies=True)
    for series in document["series"]:
        if series["direction"] == "device_to_device_peer":
            series["points"][0]["copy_times_s"] = [10 * t for t in series["points"][0]["copy_times_s"]]
    [check] = state_figures(document)["p2p_checks"]
    assert check["status"] == "degraded" and "of the 450 GB/s NV18 allows" in check["reasons"][0]


def test_nvlink_ceilings_come_from_the_version_table():
    ceiling, why = links.nvlink_ceiling(18, 6)
    assert ceiling == 450.0 and why.startswith("18 NVLink 4.0 links x 25 GB/s per link per direction")
    assert links.nvlink_ceiling(18, 7)[0] == 900.0
    assert links.nvlink_ceiling(12, 4)[0] == 300.0
    assert links.nvlink_ceiling(4, 5) == (None, "no published per-link rate known to this build for NVLink 3.1")
    assert links.nvlink_ceiling({"unavailable": "x"}, 6)[0] is None


def test_a_tampered_fixture_peer_figure_is_caught():
    document = json.loads(json.dumps(two_gpu_document(H200X2_TOPO, access=True, with_peer_copies=True)))
    document["series"][-1]["link"]["ratio"] = 0.99
    assert any("link.ratio" in line for line in discrepancies(document))
