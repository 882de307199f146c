"""The fleet outlier rule (harness/analysis/fleet.py) and the metric extraction: pure, fast."""

import pytest

from harness.analysis import fleet
from harness.fleet.metrics import ecc_state, node_metrics


def flagged(summary):
    return sorted(n for n, row in summary["nodes"].items() if row["flagged"])


def test_a_node_at_half_the_bandwidth_is_flagged_below():
    summary = fleet.summarise_rate({"n1": 38.4, "n2": 13.5, "n3": 37.9})
    assert flagged(summary) == ["n2"]
    assert summary["median"] == 37.9
    assert "below" in summary["nodes"]["n2"]["why"]
    assert summary["nodes"]["n2"]["ratio_to_others"] == pytest.approx(13.5 / 38.15, rel=1e-5)
    assert summary["spread"] == pytest.approx((38.4 - 13.5) / 37.9, rel=1e-5)


def test_noise_within_ten_percent_is_never_flagged_even_with_a_tight_fleet():
    # n3 is 8 % off: far in robust-z terms (MAD tiny) but not a difference worth flagging
    summary = fleet.summarise_rate({"n1": 100.0, "n2": 100.1, "n3": 92.0, "n4": 100.05})
    assert flagged(summary) == []
    assert abs(summary["nodes"]["n3"]["robust_z"]) > fleet.ROBUST_Z_THRESHOLD


def test_in_a_three_node_fleet_the_slow_node_is_judged_against_the_other_two():
    # Measured shape on the 2-core CI host: two nodes near 7 GB/s, one single-threaded near 4.5.
    # Against the whole fleet the MAD would be the 0.6 gap of the normal pair and z only -2.8;
    # against the other two nodes (median 7.3, MAD 0.3) it is -6.3.
    summary = fleet.summarise_rate({"n1": 7.0, "n2": 4.5, "n3": 7.6})
    assert flagged(summary) == ["n2"]
    assert summary["nodes"]["n2"]["robust_z"] == pytest.approx(0.6745 * (4.5 - 7.3) / 0.3, rel=1e-4)


def test_a_noisy_fleet_does_not_flag_a_node_that_is_only_as_far_as_the_others():
    summary = fleet.summarise_rate({"n1": 100.0, "n2": 70.0, "n3": 130.0, "n4": 85.0, "n5": 115.0})
    assert flagged(summary) == []


def test_a_node_far_above_the_others_is_flagged_too():
    summary = fleet.summarise_rate({"n1": 10.0, "n2": 10.2, "n3": 10.1, "n4": 25.0})
    assert flagged(summary) == ["n4"]
    assert "above" in summary["nodes"]["n4"]["why"]


def test_mad_zero_falls_back_to_the_relative_test():
    summary = fleet.summarise_rate({"n1": 10.0, "n2": 10.0, "n3": 10.0, "n4": 5.0})
    assert summary["mad"] == 0
    assert flagged(summary) == ["n4"]
    assert summary["nodes"]["n4"]["robust_z"] is None


def test_two_nodes_are_never_flagged_and_the_table_says_why():
    summary = fleet.summarise_rate({"n1": 10.0, "n2": 2.0})
    assert flagged(summary) == []
    assert "at least 3" in summary["note"]


def test_unavailable_values_are_listed_not_counted():
    why = {"unavailable": "bandwidth did not run"}
    summary = fleet.summarise_rate({"n1": 10.0, "n2": why, "n3": 10.5, "n4": 4.0})
    assert summary["measured_nodes"] == 3
    assert summary["nodes"]["n2"] == {"value": why, "flagged": False}
    assert flagged(summary) == ["n4"]


def test_ecc_errors_and_a_different_mode_are_flagged():
    clean = {"mode": "enabled", "uncorrectable_errors": 0, "pending_row_remaps": 0, "failed_row_remaps": 0}
    summary = fleet.summarise_ecc({"n1": clean, "n2": {**clean, "uncorrectable_errors": 2},
                                   "n3": {**clean, "mode": "disabled"}, "n4": clean,
                                   "n5": {"unavailable": "CPU-only node"}})
    assert flagged(summary) == ["n2", "n3"]
    assert "2 uncorrectable errors" in summary["nodes"]["n2"]["why"]
    assert "disabled" in summary["nodes"]["n3"]["why"]


def test_headlines_recompute_the_table_and_discrepancies_catch_an_edit():
    nodes = {"n1": {"bandwidth_sustained_gbps": 38.0, "ecc": {"unavailable": "cpu"}},
             "n2": {"bandwidth_sustained_gbps": 12.0, "ecc": {"unavailable": "cpu"}},
             "n3": {"bandwidth_sustained_gbps": 37.0, "ecc": {"unavailable": "cpu"}}}
    table = fleet.build_table(nodes, ["bandwidth_sustained_gbps"])
    document = {"nodes": [{"name": n, "metrics": m} for n, m in nodes.items()],
                "table": table, "outliers": fleet.outliers(table)}
    assert fleet.outliers(table) == {"bandwidth_sustained_gbps": ["n2"]}
    assert fleet.discrepancies(document) == []
    document["outliers"] = {}
    assert any("outliers" in line for line in fleet.discrepancies(document))
    document["outliers"] = fleet.outliers(table)
    document["nodes"][1]["metrics"] = {**nodes["n2"], "bandwidth_sustained_gbps": 37.5}
    assert any("bandwidth_sustained_gbps" in line for line in fleet.discrepancies(document))


# One device as the health probe writes it (harness/probes/_health_devices.py ecc_facts), with the
# values read on the lent H200 (../shared/reference/h200-captures/nvml-fields.idle.json:
# ecc_mode enabled, ecc_vol_uncorr 0, ecc_agg_uncorr 0, remapped_rows (0, 0, 0, 0)).
H200_DEVICE = {
    "index": 0, "name": "NVIDIA H200",
    "ecc": {"mode_current": "Enabled", "mode_pending": "Enabled",
            "volatile_corrected_errors": 0, "volatile_uncorrected_errors": 0,
            "aggregate_corrected_errors": 0, "aggregate_uncorrected_errors": 0,
            "remapped_rows_corrected": 0, "remapped_rows_uncorrected": 0,
            "remapped_rows_pending": False, "remapped_rows_failure": False},
}


def test_ecc_state_reads_counters_by_name():
    assert ecc_state({"devices": [H200_DEVICE]}) == {"mode": "Enabled", "uncorrectable_errors": 0,
                                                      "pending_row_remaps": 0, "failed_row_remaps": 0}
    errors = {**H200_DEVICE["ecc"], "volatile_uncorrected_errors": 1, "aggregate_uncorrected_errors": 3,
              "remapped_rows_uncorrected": 7, "remapped_rows_pending": True}
    state = ecc_state({"devices": [H200_DEVICE, {**H200_DEVICE, "ecc": errors}]})
    assert state["uncorrectable_errors"] == 3  # aggregate counted once, not volatile + aggregate + remapped rows
    assert state["pending_row_remaps"] == 1 and state["failed_row_remaps"] == 0


def test_ecc_state_is_unavailable_with_the_cause():
    assert "no raw/health.json" in ecc_state(None)["unavailable"]
    assert "CPU-only" in ecc_state({"devices": []})["unavailable"]
    nvml = {"unavailable": "NVML library not found"}
    assert ecc_state({"devices": nvml})["unavailable"] == "health could not list devices: NVML library not found"
    unread = {**H200_DEVICE, "ecc": {k: {"unavailable": "NVMLError_NotSupported"} for k in H200_DEVICE["ecc"]}}
    assert "no ECC field" in ecc_state({"devices": [unread]})["unavailable"]


def test_node_metrics_say_why_a_probe_is_missing():
    metrics = node_metrics({})
    assert "did not run" in metrics["bandwidth_sustained_gbps"]["unavailable"]
    assert "did not run" in metrics["gemm_best_tflops"]["unavailable"]
