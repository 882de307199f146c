"""harness/analysis/allreduce.py: formulas, the alpha-beta knee, the plateau, the ring prediction."""

import copy
import math
import random

import pytest

from harness.analysis import allreduce as allreduce_analysis
from harness.analysis.allreduce import evidence
from harness.analysis.allreduce import figures as ar
from harness.analysis.allreduce import gap as p2p

ALPHA_S, BETA = 20e-6, 100e9  # 20 us startup, 100 GB/s: knee at 2e6 bytes
SIZES = [2**k for k in range(3, 31)]  # 8 B .. 1 GiB


def synthetic_run(world=2, curve="normal", alpha=ALPHA_S, beta=BETA, noise=0.0, seed=0):
    """A run as the probe records it: five calls per rank around each rank's median time."""
    rng = random.Random(seed)
    points = []
    for size in SIZES:
        t_us = (alpha + size / beta) * 1e6
        medians = [t_us * (1 + rng.uniform(-noise, noise)) for _ in range(world)]
        times = [[m * f for f in (1.02, 0.99, 1.0, 0.98, 1.01)] for m in medians]  # median of each: m
        point = {
            "bytes": size,
            "elements": size // 4,
            "iterations": 5,
            "warmup_iterations": 1,
            "rank_times_us": times,
            "rank_median_time_us": medians,
        }
        points.append({**point, **ar.point_figures(point, world)})
    return {
        "world_size": world,
        "curve": curve,
        "points": points,
        "started_at": "2026-01-01T00:00:01.000000Z",
        "status": "completed",
        "failure": None,
    }


def independent_alpha_beta(sizes, times_s):
    """The same weighted least squares written another way, for checking the harness's fit: minimise
    sum((1 - alpha/t - (1/beta) s/t)^2), a two-variable fit through the origin solved by Cramer's rule.
    Returns (alpha_s, beta_bytes_per_s)."""
    u, v = [1 / t for t in times_s], [s / t for s, t in zip(sizes, times_s, strict=True)]
    suu, svv, suv = sum(x * x for x in u), sum(x * x for x in v), sum(a * b for a, b in zip(u, v, strict=True))
    det = suu * svv - suv * suv
    alpha = (sum(u) * svv - sum(v) * suv) / det
    inverse_beta = (suu * sum(v) - suv * sum(u)) / det
    return alpha, 1 / inverse_beta


# --- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("8", 8),
        ("64K", 65536),
        ("64M", 64 * 2**20),
        ("1G", 2**30),
        ("1GiB", 2**30),
        ("512mb", 512 * 2**20),
        (4096, 4096),
    ],
)
def test_parse_size_reads_binary_units(text, expected):
    assert ar.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "1X", "-8", "0", "1.5G", "G"])
def test_parse_size_rejects_bad_values_with_a_reason(text):
    with pytest.raises(ValueError, match="size"):
        ar.parse_size(text)


def test_sweep_sizes_are_powers_of_two_from_min_to_max():
    assert ar.sweep_sizes(8, 64) == [8, 16, 32, 64]
    assert len(ar.sweep_sizes(8, 2**30)) == 28
    with pytest.raises(ValueError, match="larger than"):
        ar.sweep_sizes(64, 8)


# --- the busbw formula (nccl-tests doc/PERFORMANCE.md) ---------------------------------------


def test_bus_factor_is_2_n_minus_1_over_n():
    assert ar.bus_factor(2) == 1.0
    assert ar.bus_factor(4) == 1.5
    assert ar.bus_factor(8) == 1.75
    assert ar.busbw_gbps(100.0, 4) == 150.0
    assert ar.algbw_gbps(2**30, 0.01) == pytest.approx(107.3741824)


def test_point_figures_take_the_slowest_rank():
    fig = ar.point_figures({"bytes": 10**6, "rank_median_time_us": [10.0, 20.0, 5.0, 8.0]}, 4)
    assert fig["time_us"] == 20.0
    assert fig["algbw_gbps"] == pytest.approx(50.0)
    assert fig["busbw_gbps"] == pytest.approx(75.0)


# --- the knee --------------------------------------------------------------------------------


def test_fit_recovers_alpha_beta_and_knee_from_exact_data():
    run = synthetic_run()
    fit = ar.fit_alpha_beta([p["bytes"] for p in run["points"]], [p["time_us"] * 1e-6 for p in run["points"]])
    assert fit.alpha_s == pytest.approx(ALPHA_S, rel=1e-9)
    assert fit.beta_bytes_per_s == pytest.approx(BETA, rel=1e-9)
    assert fit.knee_bytes == pytest.approx(2e6, rel=1e-9)
    assert fit.rel_rms_residual < 1e-9
    # at the knee the two terms are equal, so a call there takes twice the startup time: the
    # measured times of the sizes around 2e6 B, interpolated, give 2 x 20 us
    below, above = (next(p for p in run["points"] if p["bytes"] == b) for b in (2**20, 2**21))
    at_knee = below["time_us"] + (above["time_us"] - below["time_us"]) * ((fit.knee_bytes - 2**20) / (2**21 - 2**20))
    assert at_knee == pytest.approx(2 * ALPHA_S * 1e6, rel=1e-9)


def test_fit_is_robust_to_five_percent_noise():
    figures = ar.curve_figures(synthetic_run(noise=0.05, seed=7))
    assert figures["alpha_us"] == pytest.approx(20.0, rel=0.1)
    assert figures["beta_gbps"] == pytest.approx(100.0, rel=0.1)
    assert figures["knee_bytes"] == pytest.approx(2e6, rel=0.2)


def test_half_plateau_lands_on_the_first_power_of_two_past_the_knee():
    # algbw(s) = s / (alpha + s/beta) reaches beta/2 exactly at s = alpha*beta = 2e6 bytes;
    # the plateau (median of 256 MiB..1 GiB) is ~0.99 beta, so the first size >= half is 2 MiB.
    figures = ar.curve_figures(synthetic_run())
    assert figures["half_plateau_bytes"] == 2**21
    assert figures["plateau_sizes_bytes"] == [2**28, 2**29, 2**30]
    assert figures["plateau_busbw_gbps"] == pytest.approx(100.0, rel=0.01)


def test_fit_refuses_a_curve_without_a_startup_regime():
    sizes = [2**20, 2**21, 2**22]
    with pytest.raises(ar.FitError, match="alpha"):
        ar.fit_alpha_beta(sizes, [s / 1e11 - 1e-6 for s in sizes])  # negative intercept
    with pytest.raises(ar.FitError, match="distinct"):
        ar.fit_alpha_beta([8, 8], [1e-5, 1e-5])
    with pytest.raises(ar.FitError, match="grow"):
        ar.fit_alpha_beta([8, 16, 32], [3e-5, 2e-5, 1e-5])


def test_curve_figures_explain_a_missing_fit():
    figures = ar.curve_figures({"world_size": 2, "points": []})
    assert figures["knee_bytes"] is None and "2 distinct sizes" in figures["fit_reason"]


# --- the ring prediction ----------------------------------------------------------------------


def test_ring_prediction_for_world_sizes_2_and_4():
    prediction = ar.ring_prediction([4, 2])
    assert prediction["multipliers"] == {"2": 1.0, "4": 1.5}
    assert prediction["predicted_algbw_ratio"] == {"4": pytest.approx(2 / 3)}
    assert prediction["predicted_busbw_ratio"] == {"4": 1.0}


def test_ring_comparison_is_exact_when_links_scale_ideally():
    # same per-rank bandwidth: time grows by 2(n-1)/n, so busbw is equal and algbw drops by 2/3
    two = synthetic_run(world=2, alpha=0, beta=BETA)
    four = synthetic_run(world=4, alpha=0, beta=BETA / 1.5)
    comparison = ar.ring_comparison(ar.ring_prediction([2, 4]), [two, four])
    entry = comparison["by_world_size"]["4"]
    assert entry["at_bytes"] == 2**30
    assert entry["measured_algbw_ratio"] == pytest.approx(2 / 3)
    assert entry["relative_deviation"] == pytest.approx(0.0, abs=1e-9)
    assert entry["measured_busbw_ratio"] == pytest.approx(1.0)


def test_ring_comparison_says_why_not():
    comparison = ar.ring_comparison(ar.ring_prediction([2, 4]), [synthetic_run(world=2)])
    assert comparison["by_world_size"]["4"] == {"compared": False, "reason": "no normal points at world size 4"}


# --- normal versus control ----------------------------------------------------------------------


def test_gap_explanation_uses_topology_transports_and_pcie():
    normal = synthetic_run(world=2, beta=300e9)
    control = synthetic_run(world=2, curve="p2p_disabled", alpha=40e-6, beta=20e9)
    gap = ar.p2p_gap(normal, control)
    assert gap["busbw_ratio"] == pytest.approx((40e-6 + 2**30 / 20e9) / (20e-6 + 2**30 / 300e9))
    explained = p2p.explain_gap(
        gap,
        {"kinds": ["NV18"]},
        {"normal": ["P2P/CUMEM/read"], "p2p_disabled": ["SHM/direct/direct"]},
        {"generation": 5, "width": 16},
    )
    assert explained["explained"]
    assert explained["pcie_ceiling_gbps"] == pytest.approx(63.0, rel=0.01)
    text = explained["text"]
    assert "NV18" in text and "SHM/direct/direct" in text and "crosses PCIe twice" in text
    assert "exceeds that ceiling" in text and "within it" in text


# --- headlines and discrepancies ----------------------------------------------------------------


def document_with(runs, prediction=None):
    """A document as the probe assembles it around RUNS (no NCCL log, no topology)."""
    return {
        "backend": "nccl",
        "world_sizes": sorted({r["world_size"] for r in runs}),
        "runs": runs,
        "dtype": "float32",
        "sizes_bytes": SIZES,
        "contract_version": 2,
        "limitations": [{"what": "x", "why": "y"}],
        "prediction": prediction,
        "nvls": evidence.nvls_record(runs, {"NCCL_NVLS_ENABLE": "0"}),
        "ring_comparison": (
            ar.ring_comparison(prediction, runs) if prediction else {"unavailable": "one world size measured"}
        ),
        "explanations": evidence.explanations(runs, {}),
        "topology": {},
    }


def stamped(run):
    figures = ar.curve_figures(run)
    run["fit"] = {k: figures[k] for k in ("alpha_us", "beta_gbps", "beta_bus_gbps", "knee_bytes")}
    run["fit"]["rel_rms_residual"] = figures["fit_rel_rms_residual"]
    run["half_plateau"] = {k: figures[k] for k in ("half_plateau_bytes", "plateau_busbw_gbps", "plateau_sizes_bytes")}
    run["busbw_at_max_gbps"] = figures["busbw_at_max_gbps"]
    return run


def test_headlines_have_the_keys_the_report_relies_on():
    runs = [
        stamped(synthetic_run(world=4)),
        stamped(synthetic_run(world=4, curve="p2p_disabled", beta=20e9)),
        stamped(synthetic_run(world=2)),
    ]
    heads = ar.headlines(
        document_with(runs, {"written_at": "2026-01-01T00:00:00.000000Z", **ar.ring_prediction([2, 4])})
    )
    assert heads["backend"] == "nccl" and heads["world_size"] == 4
    assert set(heads["curves"]) == {"normal", "p2p_disabled"}
    assert set(heads["curves"]["normal"]) == {
        "knee_bytes",
        "alpha_us",
        "beta_gbps",
        "half_plateau_bytes",
        "busbw_at_max_gbps",
    }
    assert heads["curves"]["normal"]["knee_bytes"] == pytest.approx(2e6)
    assert heads["limitations"] == ["x"] and heads["nvls_enabled"] is False
    assert heads["p2p_gap"]["4"]["busbw_ratio"] > 1
    assert heads["ring_comparison"]["compared"]


def test_discrepancies_empty_when_consistent_and_name_a_tampered_figure():
    runs = [stamped(synthetic_run(world=2)), stamped(synthetic_run(world=4))]
    document = document_with(runs, {"written_at": "2026-01-01T00:00:00.000000Z", **ar.ring_prediction([2, 4])})
    assert allreduce_analysis.discrepancies(document) == []
    tampered = copy.deepcopy(document)
    tampered["runs"][0]["points"][-1]["busbw_gbps"] *= 1.1
    tampered["runs"][1]["fit"]["knee_bytes"] = 1.0
    tampered["prediction"]["written_at"] = "2026-01-01T00:00:02.000000Z"  # after the run started
    found = allreduce_analysis.discrepancies(tampered)
    assert any("1073741824 B busbw_gbps" in line for line in found)
    assert any("fit knee_bytes" in line for line in found)
    assert any("not before the first run" in line for line in found)


def test_pcie_ceiling_unknown_generation_is_none():
    assert p2p.pcie_ceiling_gbps({"unavailable": "x"}, 16) is None
    assert math.isclose(p2p.pcie_ceiling_gbps(4, 16), 31.5, rel_tol=0.01)
