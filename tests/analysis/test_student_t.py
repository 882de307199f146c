"""Student's t quantiles against the printed tables (two-sided)."""

from __future__ import annotations

import math

import pytest

from harness.analysis.student_t import central, two_sided_quantile

# (degrees of freedom, two-sided alpha, the table's t): any statistics textbook's t table (e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, 1.3.6.7.2, upper critical values at alpha/2).
TABLE = [
    (1, 0.05, 12.706),
    (2, 0.05, 4.303),
    (5, 0.01, 4.032),
    (10, 0.05, 2.228),
    (10, 0.001, 4.587),
    (30, 0.01, 2.750),
]


@pytest.mark.parametrize(("df", "alpha", "t"), TABLE)
def test_quantiles_match_the_table(df: int, alpha: float, t: float) -> None:
    assert two_sided_quantile(alpha, df) == pytest.approx(t, abs=5e-4)


def test_the_distribution_tends_to_the_normal() -> None:
    normal = math.erf(1.96 / math.sqrt(2))
    assert central(1.96, 2000) == pytest.approx(normal, abs=3e-4)
    assert central(0.0, 3) == 0.0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="whole number"):
        central(1.0, 0)
    with pytest.raises(ValueError, match="in \\(0, 1\\)"):
        two_sided_quantile(1.5, 4)
