"""The noise model a verdict is judged with (harness.analysis.noise): the SKU's campaign, the case judged (the
same GPU or another unit), the share of the false-alarm rate a figure gets, the floors and the stated
defaults, each tolerance saying where it came from."""

from __future__ import annotations

import math

import pytest

from harness import catalogue
from harness.analysis.noise import NoiseModel, noise_model
from harness.analysis.repeatability import declaration
from harness.analysis.student_t import two_sided_quantile

H200 = "h200-sxm-141gb"
CAMPAIGN = {
    "source": {"id": "test", "runs": 8, "machine_starts": 3, "gpus": 3},
    "figures": [
        {
            "noise": "stress.steady_tflops",
            "runs": 8,
            "gpus": 3,
            "starts": 3,
            "sd_within": 0.004,
            "df_within": 5,
            "sd_other": 0.005,
            "df_other": 7,
            "range": [665.0, 675.0],
        },
        {
            "noise": "bandwidth.plateau_gbps",
            "runs": 8,
            "gpus": 3,
            "starts": 3,
            "sd_within": 0.0001,
            "df_within": 5,
            "sd_other": 0.003,
            "df_other": 7,
            "range": [4232.0, 4260.0],
        },
        {
            "noise": "transfer.h2d_pinned_gbps",
            "runs": 3,
            "gpus": 1,
            "starts": 1,
            "sd_within": 0.0007,
            "df_within": 2,
            "sd_other": 0.0007,
            "df_other": 2,
            "range": [55.3, 55.4],
        },
    ],
    "false_alarms": {"pairs": 28, "not_reproduced": 0},
}


def model() -> NoiseModel:
    return NoiseModel(H200, declaration(H200), catalogue.repeatability_bounds(), CAMPAIGN)


def test_a_deciding_rate_gets_its_share_of_the_false_alarm_rate():
    """t(df, 1% / K) x sqrt(2) x sd: one machine start's sd and df, or another start's; more deciding rates,
    wider each."""
    same = model().noise("stress.steady_tflops", "steady", same_start=True, family=9)
    assert same.measured and same.share == pytest.approx(two_sided_quantile(0.01 / 9, 5) * math.sqrt(2) * 0.004)
    other = model().noise("stress.steady_tflops", "steady", same_start=False, family=9)
    assert other.share == pytest.approx(two_sided_quantile(0.01 / 9, 7) * math.sqrt(2) * 0.005)
    alone = model().noise("stress.steady_tflops", "steady", same_start=False, family=1)
    assert alone.share < other.share
    assert "another machine start or GPU of the SKU" in other.source and "campaign test" in other.source


def test_no_rate_is_held_tighter_than_its_floor():
    """The bandwidth plateau repeats to 0.01% within a machine start: the rule's 1.5% floor holds; the pinned
    copies get the stated 4% (the reporter's 0.964-1.038 between calls of one day)."""
    tight = model().noise("bandwidth.plateau_gbps", "steady", same_start=True, family=9)
    assert tight.share == 0.015 and "the rule's floor" in tight.source
    pinned = model().noise("transfer.h2d_pinned_gbps", "steady", same_start=True, family=9)
    assert pinned.share == 0.04 and "issue 34" in pinned.source


def test_a_figure_no_campaign_measured_gets_a_stated_default():
    stated = model().noise("allreduce.busbw_at_max_gbps", "steady", family=9)
    assert not stated.measured and stated.share == 0.05 and stated.source.startswith("stated default for allreduce")
    assert noise_model(None).noise("x", "burst").share == 0.05
    with pytest.raises(ValueError, match="no repeatability bound for the figure kind 'sideways'"):
        model().noise("x", "sideways")


def test_a_figure_no_campaign_measured_is_still_held_to_its_stated_floor():
    """The campaign's out-of-sample pairs (bench/RESULTS.md, c3, 2026-12-02): a block without the pinned
    copies judged them at their stated 2% default, under the 4% the floor measured, and called 5 of 78 clean
    pairs not reproduced (0.977-0.978 and 1.022-1.023); a default is never under the rule's floors."""
    empty = NoiseModel(H200, declaration(H200), catalogue.repeatability_bounds(), {**CAMPAIGN, "figures": []})
    pinned = empty.noise("transfer.gpu0.h2d_pinned_gbps", "steady", family=9)
    assert not pinned.measured and pinned.share == 0.04
    assert "stated default" in pinned.source and "the stated floor for transfer.*_pinned_gbps" in pinned.source
    steady = empty.noise("stress.gpu0.steady_tflops", "steady", family=9)
    assert steady.share >= 0.015 and "floor" not in steady.source  # a default over the floor stays as stated


def test_equal_kinds_are_equal_only():
    assert model().noise("stress.gpu0.memory_errors", "count").share == 0.0


def test_the_catalogues_h200_campaign_is_measured():
    """The H200's block names its campaign and what it measured of the rule, in and out of sample
    (bench/campaign.py made it from
    tests/fixtures/h200/campaign/campaign.json; tests/machines/test_h200_campaign.py recomputes it)."""
    h200 = noise_model(H200)
    assert h200.campaign["source"]["machine_starts"] >= 3 and h200.campaign["source"]["gpus"] >= 2
    alarms = h200.campaign["false_alarms"]
    assert alarms["not_reproduced"] == 0
    # out of sample (each pair judged by a block made without its machine starts: the blind test) the rule
    # stays under a 5% false-alarm rate: 3 of 136 pairs after calls c4 and c5 (2026-12-02, one sustained rate
    # between the campaign's fastest and one of its slowest GPUs), 0 of 78 before them
    assert alarms["out_of_sample_pairs"] >= 100
    assert alarms["out_of_sample_not_reproduced"] / alarms["out_of_sample_pairs"] < 0.05
    # a 5% loss of the sustained GEMM rate or of HBM bandwidth is outside the tolerance within a machine start
    assert h200.noise("stress.steady_tflops", "steady", same_start=True, family=9).share < 0.05
    assert h200.noise("bandwidth.plateau_gbps", "steady", same_start=True, family=9).share < 0.05
