"""Robust statistics for baselines (harness.analysis.robust): MAD scaled to a sigma, and outliers
rejected until none is left, never within the run-to-run noise, never with fewer than three values."""

import statistics

import pytest

from harness.analysis.robust import MAD_SCALE, reject_outliers, spread


def test_the_scaled_mad_estimates_sigma():
    s = spread([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.mad == 1.0 and s.n == 5
    assert s.scaled_mad == pytest.approx(1.4826, abs=1e-4) and MAD_SCALE == pytest.approx(1 / 0.6745)


def test_a_slow_node_is_rejected_and_the_rest_kept():
    values = [100.0, 101.0, 99.5, 100.5, 99.0, 80.0]
    result = reject_outliers(values, noise_share=0.02)
    assert [i for i, _ in result.rejected] == [5] and result.spread.n == 5
    assert result.spread.median == statistics.median(values[:5])


def test_rejection_is_iterated_until_a_pass_drops_nothing():
    """Two slow nodes widen the first pass's MAD enough to hide a third, moderately slow one (97);
    the second pass, with them gone and the median and MAD recomputed, drops it too."""
    values = [100.0, 100.4, 99.6, 100.2, 99.8, 97.0, 80.0, 80.0]
    result = reject_outliers(values, noise_share=0.02)
    assert result.rejected == ((6, 1), (7, 1), (5, 2)) and result.passes == 3
    assert result.spread.n == 5 and result.spread.median == 100.0


def test_a_value_within_the_run_to_run_noise_is_never_rejected():
    values = [100.0, 100.0, 100.0, 100.0, 98.5]  # MAD 0, so any difference is "infinitely many MADs"
    assert reject_outliers(values, noise_share=0.02).rejected == ()
    assert [i for i, _ in reject_outliers(values, noise_share=0.01).rejected] == [4]


def test_two_values_are_never_rejected():
    assert reject_outliers([100.0, 50.0], noise_share=0.01).rejected == ()
