"""A fleet metric whose nodes all report (nearly) the same value still gets its histogram: numpy
cannot cut a range narrower than its float spacing into bins (the 1,000-node bench of the full H200
bundle hit "Too many bins for data range" and, before the guard, lost the fleet bundle)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from harness.fleet import plots


def rows(values):
    return {"median": values[0], "nodes": {f"n{i:04d}": {"value": v, "flagged": False} for i, v in enumerate(values)}}


def test_equal_values_are_drawn_with_a_range_around_them():
    values = [1.0121457489878543] * 997 + [1.0121457489878545] * 3  # one float step apart
    assert plots._hist_range(values) is not None
    fig, ax = plt.subplots()
    try:
        assert plots._draw(
            ax,
            "stress_burst_over_steady",
            {"unit": "ratio", "description": "burst / steady"},
            {"h200-sxm-141gb": rows(values)},
        )
        low, high = ax.get_xlim()
        assert low < values[0] < high
    finally:
        plt.close(fig)


def test_spread_values_keep_their_own_range():
    assert plots._hist_range([4200.0, 4250.0, 4300.0]) is None
