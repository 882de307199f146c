"""Plateau selection, classification and recomputation on real recorded sweeps."""

import copy

import pytest

from harness.analysis import bandwidth as bandwidth_analysis
from harness.analysis.bandwidth import figures as bw
from tests.bandwidth_fixtures import cpu_sweep, h200_copy_sweep

H200_L2_BYTES = 60 * 2**20  # torch.cuda.get_device_properties(0).L2_cache_size on the lent H200


def h200_points(empty_launch_s=None):
    points = []
    for size, gbps in h200_copy_sweep():
        nbytes = bw.bytes_per_iteration("copy", int(size * 2**20))
        marks, why = bw.classify(nbytes / (gbps * 1e9), nbytes, H200_L2_BYTES, empty_launch_s)
        points.append({"size_mib": size, "gbps": gbps, "marks": marks, "why": why})
    return points


def test_byte_counting_is_reads_plus_writes_times_buffer_bytes():
    assert bw.bytes_per_iteration("copy", 100) == 200
    assert bw.bytes_per_iteration("read", 100) == 100
    assert bw.bytes_per_iteration("triad", 100) == 300
    assert bw.bytes_per_iteration("write", 100) == 100


def test_a_document_without_its_element_type_has_no_bytes_and_says_so():
    document = copy.deepcopy(cpu_sweep())
    point = document["sweep"][0]
    assert bw.point_bytes(document, point) == bw.bytes_per_iteration(document["kernel"], point["elements"] * 4)
    del document["dtype"]  # the schema lets it be absent (a key holder's edit, found by bench/fuzz_verify.py)
    with pytest.raises(ValueError, match=r"element type '\(absent\)' has no known width"):
        bw.point_bytes(document, point)
    document["dtype"] = "float32"
    del point["elements"]
    with pytest.raises(ValueError, match=rf"the {point['size_mib']} MiB sweep point states no element count"):
        bw.point_bytes(document, point)


def test_h200_sweep_plateau_is_the_large_sizes_not_the_maximum():
    points = h200_points()
    assert [p["size_mib"] for p in points] == [4, 16, 64, 256, 1024, 4096, 8192]
    found = bw.plateau(points)
    assert found["reached"]
    assert found["sizes_mib"] == [1024, 4096, 8192]
    assert found["gbps"] == 4254  # median of 4213 / 4254 / 4281
    assert found["gbps"] < max(p["gbps"] for p in points)


def test_h200_small_sizes_are_explained():
    points = h200_points()
    by_size = {p["size_mib"]: p for p in points}
    assert by_size[4]["marks"] == ["cache_resident"] and by_size[16]["marks"] == ["cache_resident"]
    assert by_size[64]["marks"] == []  # 128 MiB touched per copy: beyond the 60 MiB L2
    found = bw.plateau(points)
    explained = {e["size_mib"]: e for e in bw.explain_off_plateau(points, found["gbps"], found["sizes_mib"])}
    assert set(explained) == {4, 16, 64, 256}
    assert "60 MiB cache" in explained[4]["why"]
    assert "ramp" in explained[256]["why"]
    assert explained[4]["vs_plateau"] == pytest.approx((880 - 4254) / 4254, abs=1e-4)


def test_a_wider_tolerance_takes_in_more_of_the_ramp():
    found = bw.plateau(h200_points(), tolerance=0.05)
    assert found["sizes_mib"] == [256, 1024, 4096, 8192]


def test_launch_bound_is_decided_against_the_empty_launch():
    # 4 MiB copy on the H200: ~9.5 us per copy; with a 4 us empty launch that is within 3 x.
    points = h200_points(empty_launch_s=4e-6)
    assert {p["size_mib"]: p["marks"] for p in points}[4] == ["cache_resident", "launch_bound"]
    assert {p["size_mib"]: p["marks"] for p in points}[1024] == []


def test_the_seductive_small_buffer_alone_names_no_plateau():
    only_4mib = [p for p in h200_points() if p["size_mib"] == 4]
    found = bw.plateau(only_4mib)
    assert not found["reached"] and found["gbps"] is None
    assert "cache_resident" in found["why"]


def test_a_curve_still_rising_has_no_plateau():
    rising = [{"size_mib": s, "gbps": g, "marks": []} for s, g in ((256, 3000), (1024, 3500), (4096, 4000))]
    found = bw.plateau(rising)
    assert not found["reached"] and "still rising" in found["why"]


def test_cpu_sweep_recorded_here_has_a_plateau_beyond_the_last_level_cache():
    document = cpu_sweep()
    heads = bw.headlines(document)
    assert heads["device"] == "cpu"
    assert heads["plateau_sizes_mib"] == [256, 512, 1024]
    assert heads["plateau_gbps"] == pytest.approx(document["plateau"]["gbps"])
    assert heads["plateau_gbps"] < max(p["median_gbps"] for p in document["sweep"])
    small = [p for p in document["sweep"] if p["size_mib"] <= 64]
    assert all(p["marks"] == ["cache_resident"] for p in small)
    assert heads["repeat_verdict"] == "pass" and len(heads["repeat_medians_gbps"]) == 3
    assert heads["sku_id"] is None and heads["known_good_ratio"] is None
    assert bandwidth_analysis.discrepancies(document) == []


def test_discrepancies_catch_a_stated_figure_that_the_raw_times_do_not_support():
    document = copy.deepcopy(cpu_sweep())
    document["plateau"]["gbps"] *= 1.2
    document["sweep"][-1]["median_gbps"] = 99.0
    document["repeats"]["verdict"] = "fail"
    found = bandwidth_analysis.discrepancies(document)
    assert any(line.startswith("plateau.gbps") for line in found)
    assert any("1024 MiB" in line for line in found)
    assert any(line.startswith("repeats.verdict") for line in found)


def test_spread_is_max_minus_min_over_median():
    assert bw.spread([100.0, 105.0, 110.0]) == pytest.approx(10 / 105)
