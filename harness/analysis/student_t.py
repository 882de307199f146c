"""Student's t distribution for whole degrees of freedom: the two-sided tail and its quantile.

Standard library only (the analysis layer runs in the probes and in verify, where no SciPy is installed). For
whole degrees of freedom the distribution function has a closed form (Abramowitz and Stegun, Handbook of
Mathematical Functions, 26.7.3 and 26.7.4): with theta = atan(t / sqrt(nu)), P(|T| <= t) is a finite sum of
powers of cos(theta). The quantile is found by bisection on it (to 1e-12 relative), so it is as exact as the
sum. tests/analysis/test_student_t.py checks it against the printed tables (2.228 at 10 degrees of freedom
and 5%, 63.657 at 1 and 1%, ...).
"""

from __future__ import annotations

import math


def central(t: float, df: int) -> float:
    """P(|T| <= t) for T with DF (a whole number >= 1) degrees of freedom (A&S 26.7.3, 26.7.4)."""
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom must be a whole number >= 1, not {df!r}")
    t = abs(t)
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2 == 1:  # odd: (2/pi)[theta + sin cos (1 + 2/3 cos^2 + (2*4)/(3*5) cos^4 + ...)]
        total, term = 0.0, 1.0
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= cos2 * (2 * k) / (2 * k + 1)
        return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total if df > 1 else theta)
    total, term = 0.0, 1.0  # even: sin (1 + 1/2 cos^2 + (1*3)/(2*4) cos^4 + ...)
    for k in range(1, df // 2 + 1):
        total += term
        term *= cos2 * (2 * k - 1) / (2 * k)
    return math.sin(theta) * total


def two_sided_quantile(alpha: float, df: int) -> float:
    """The t with P(|T| > t) = ALPHA (0 < ALPHA < 1) at DF degrees of freedom."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"a two-sided tail probability is in (0, 1), not {alpha!r}")
    low, high = 0.0, 1.0
    while 1.0 - central(high, df) > alpha:
        high *= 2.0
    while high - low > 1e-12 * high:
        middle = (low + high) / 2.0
        if 1.0 - central(middle, df) > alpha:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0
