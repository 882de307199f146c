"""Robust statistics of a few numbers: median, MAD, and outliers rejected until none is left.

Standard library only. Used by `dossier baseline` (harness.judge.acceptance.baseline) to turn one
golden unit's bundles, or a fleet's, into thresholds.

* The MAD is the median absolute deviation from the median. Scaled by MAD_SCALE = 1/0.6745 =
  1.4826 (1/Phi^-1(3/4)), it estimates the standard deviation of normally distributed data, so a
  distance of k scaled MADs reads like k sigmas (harness.analysis.fleet uses the same 0.6745).
* A value is an outlier when it lies more than REJECT_K = 3.5 scaled MADs from the median, the
  modified z-score cut of Iglewicz and Hoaglin (1993) that the fleet comparison uses too, AND
  further from it than the figure's run-to-run tolerance (a share of the median): a tight set
  never rejects a value that differs from the others by no more than measurement noise, and a set
  whose MAD is 0 still rejects a value beyond that noise.
* `reject_outliers` repeats: drop the outliers, recompute the median and MAD from what is left,
  until a pass drops nothing (SuperBench's `fix_threshold` baseline algorithm iterates the same
  way, with the mean; superbench/analyzer/baseline_generation.py). With fewer than MIN_SAMPLES
  values nothing is rejected: a median of two says nothing about which one is odd.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.analysis.fleet import MAD_TO_Z, MIN_NODES, ROBUST_Z_THRESHOLD

MAD_SCALE = 1 / MAD_TO_Z  # 1.4826: a scaled MAD estimates sigma for normal data
REJECT_K = ROBUST_Z_THRESHOLD  # 3.5 scaled MADs (Iglewicz and Hoaglin's modified z-score cut)
MIN_SAMPLES = MIN_NODES  # 3: fewer values cannot single one out


@dataclass(frozen=True)
class Spread:
    """The median of some values, their MAD (raw and scaled by MAD_SCALE) and how many there are."""

    median: float
    mad: float
    n: int

    @property
    def scaled_mad(self) -> float:
        return MAD_SCALE * self.mad


def spread(values: list[float]) -> Spread:
    if not values:
        raise ValueError("no values")
    median = statistics.median(values)
    return Spread(median, statistics.median(abs(v - median) for v in values), len(values))


def is_outlier(value: float, around: Spread, noise_share: float) -> bool:
    """Beyond REJECT_K scaled MADs of the median and beyond the run-to-run noise around it."""
    distance = abs(value - around.median)
    return distance > REJECT_K * around.scaled_mad and distance > noise_share * abs(around.median)


@dataclass(frozen=True)
class Rejection:
    """What `reject_outliers` kept, what it dropped (by index into the input) and in which pass."""

    kept: tuple[int, ...]
    rejected: tuple[tuple[int, int], ...]  # (index, pass number from 1)
    spread: Spread
    passes: int


def reject_outliers(values: list[float], noise_share: float) -> Rejection:
    """Drop outliers, recompute, repeat until a pass drops nothing (see the module docstring)."""
    kept = list(range(len(values)))
    rejected: list[tuple[int, int]] = []
    passes = 0
    while True:
        passes += 1
        current = spread([values[i] for i in kept])
        if len(kept) < MIN_SAMPLES:
            return Rejection(tuple(kept), tuple(rejected), current, passes)
        dropped = [i for i in kept if is_outlier(values[i], current, noise_share)]
        if not dropped or len(dropped) == len(kept):
            return Rejection(tuple(kept), tuple(rejected), current, passes)
        rejected += [(i, passes) for i in dropped]
        kept = [i for i in kept if i not in dropped]
