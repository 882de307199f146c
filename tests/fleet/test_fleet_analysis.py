"""The fleet outlier rules (harness/analysis/fleet.py) and the metric extraction: pure, fast."""

import random
import statistics

import pytest

from harness import registry
from harness.analysis import fleet
from harness.analysis.health.fleet import ecc_state
from harness.bundle.view import BundleView
from harness.fleet.metrics import metric_kinds, node_metrics


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


def test_counts_flag_any_node_above_zero_and_states_the_nodes_unlike_most():
    counts = fleet.summarise_count({"n1": 0, "n2": 2, "n3": 0, "n4": {"unavailable": "CPU-only node"}})
    assert flagged(counts) == ["n2"] and counts["total"] == 2 and counts["measured_nodes"] == 3
    assert "2, where 0 is the only good count" in counts["nodes"]["n2"]["why"]
    states = fleet.summarise_state({"n1": "x16", "n2": "x8", "n3": "x16", "n4": "x16"})
    assert flagged(states) == ["n2"] and states["usual"] == "x16"
    assert states["nodes"]["n2"]["why"] == "x8 where most nodes report x16 (3 of 4)"
    tie = fleet.summarise_state({"n1": "Enabled", "n2": "Disabled"})
    assert tie["usual"] is None and flagged(tie) == []


def test_leave_one_out_medians_and_mads_are_those_of_statistics_median_node_by_node():
    rng = random.Random(7)
    for n in (2, 3, 4, 5, 10, 51, 200):
        values = [round(rng.gauss(100, 5), 1) for _ in range(n)] + [100.0, 100.0]  # ties included
        for i, (median, mad) in enumerate(fleet.leave_one_out(values)):
            others = values[:i] + values[i + 1 :]
            assert median == statistics.median(others)
            assert mad == statistics.median(abs(v - median) for v in others)


def test_nodes_are_compared_only_within_their_sku():
    values = {f"a{i}": 100.0 + i % 3 for i in range(6)} | {f"b{i}": 50.0 + i % 3 for i in range(6)}
    skus = {n: ("sku-a" if n.startswith("a") else "sku-b") for n in values}
    table = fleet.build_table({n: {"rate_gbps": v} for n, v in values.items()}, {"rate_gbps": "rate"}, skus)
    assert set(table["rate_gbps"]["groups"]) == {"sku-a", "sku-b"} and fleet.flags(table) == []
    mixed = fleet.build_table({n: {"rate_gbps": v} for n, v in values.items()}, {"rate_gbps": "rate"}, {})
    assert set(mixed["rate_gbps"]["groups"]) == {fleet.NO_SKU}


def test_a_flag_names_the_metric_value_median_and_mads_away():
    values = {f"n{i}": 100.0 + (i % 5) * 0.5 for i in range(20)} | {"slow": 80.0}
    table = fleet.build_table(
        {n: {"rate_gbps": v} for n, v in values.items()}, {"rate_gbps": "rate"}, dict.fromkeys(values, "sku")
    )
    [flag] = fleet.flags(table)
    assert flag["node"] == "slow" and flag["metric"] == "rate_gbps" and flag["value"] == 80.0 and flag["sku"] == "sku"
    assert flag["median_others"] == 101.0 and flag["mads_away"] == pytest.approx((80 - 101) / 0.5)
    assert fleet.outliers(table) == {"rate_gbps": ["slow"]}


def test_headlines_recompute_the_table_and_discrepancies_catch_an_edit():
    nodes = {
        "n1": {"bandwidth_sustained_gbps": 38.0, "ecc_mode": "Enabled"},
        "n2": {"bandwidth_sustained_gbps": 12.0, "ecc_mode": "Enabled"},
        "n3": {"bandwidth_sustained_gbps": 37.0, "ecc_mode": "Enabled"},
    }
    kinds = {"bandwidth_sustained_gbps": "rate", "ecc_mode": "state"}
    table = fleet.build_table(nodes, kinds, {})
    document = {
        "nodes": [{"name": n, "metrics": m, "sku": None} for n, m in nodes.items()],
        "metrics": {m: {"kind": k} for m, k in kinds.items()},
        "table": table,
        "flags": fleet.flags(table),
        "outliers": fleet.outliers(table),
    }
    assert fleet.outliers(table) == {"bandwidth_sustained_gbps": ["n2"]}
    assert fleet.discrepancies(document) == []
    document["outliers"] = {}
    assert any("outliers" in line for line in fleet.discrepancies(document))
    document["outliers"] = fleet.outliers(table)
    document["nodes"][1]["metrics"] = {**nodes["n2"], "bandwidth_sustained_gbps": 37.5}
    assert any("bandwidth_sustained_gbps" in line for line in fleet.discrepancies(document))


# One device as the health probe writes it (harness/probes/devices.py ecc_facts), with the
# values read on the lent H200 (../shared/reference/h200-captures/nvml-fields.idle.json:
# ecc_mode enabled, ecc_vol_uncorr 0, ecc_agg_uncorr 0, remapped_rows (0, 0, 0, 0)).
H200_DEVICE = {
    "index": 0,
    "name": "NVIDIA H200",
    "ecc": {
        "mode_current": "Enabled",
        "mode_pending": "Enabled",
        "volatile_corrected_errors": 0,
        "volatile_uncorrected_errors": 0,
        "aggregate_corrected_errors": 0,
        "aggregate_uncorrected_errors": 0,
        "remapped_rows_corrected": 0,
        "remapped_rows_uncorrected": 0,
        "remapped_rows_pending": False,
        "remapped_rows_failure": False,
    },
}


def test_ecc_state_reads_counters_by_name():
    assert ecc_state({"devices": [H200_DEVICE]}) == {
        "mode": "Enabled",
        "uncorrectable_errors": 0,
        "pending_row_remaps": 0,
        "failed_row_remaps": 0,
    }
    errors = {
        **H200_DEVICE["ecc"],
        "volatile_uncorrected_errors": 1,
        "aggregate_uncorrected_errors": 3,
        "remapped_rows_uncorrected": 7,
        "remapped_rows_pending": True,
    }
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
    view = BundleView(files={}, commands={"steps": []}, environment={}, documents={}, analyses=registry.analysis_module)
    metrics = node_metrics(view)
    assert set(metrics) == set(metric_kinds())
    assert "did not run" in metrics["bandwidth_sustained_gbps"]["unavailable"]
    assert "did not run" in metrics["gemm_best_tflops"]["unavailable"]
    assert "health-load did not run" in metrics["pcie_link_width_under_load"]["unavailable"]
