"""The lab's success criteria as judged from recomputed figures, the unit formatting, and diff.

Inputs here are figure dictionaries fed to the judging logic (as harness.analysis would return
them), to reach each pass and fail path; no report is made from them.
"""

import pytest

from harness import catalogue, registry
from harness.analysis.units import value_text
from harness.bundle.view import BundleView, Figures
from harness.judge import lab
from harness.judge.facts import BundleFacts
from harness.present.diff import compare
from harness.present.diff_tables import comparison_text


def view(figures: dict, statuses: dict | None = None, inputs: dict | None = None, documents=None):
    statuses = statuses or {}
    steps = [
        {
            "step": s,
            "status": statuses.get(s, "completed"),
            "why": "because",
            "analysis": s,
            "inputs": (inputs or {}).get(s, {}),
            "plots": [],
            "image": None,
            "checkpoint": None,
        }
        for s in set(figures) | set(statuses)
    ]
    v = BundleView(
        files={},
        commands={"steps": steps, "tool": {}, "runner": {}},
        environment={"host": {}},
        documents=documents or {s: {} for s in figures},
        analyses=registry.analysis_module,
    )
    object.__setattr__(v, "figures", lambda step: Figures(figures.get(step), None if step in figures else "absent"))
    return v


def judge_lab(judge, bundle_view):
    """The one Result a lab criterion's judge gives for a bundle view."""
    return judge(BundleFacts(bundle_view))[0]


def bandwidth(**over):
    base = {
        "repeat_spread": 0.02,
        "repeat_verdict": "pass",
        "known_good_ratio": 0.97,
        "sku_id": "h200-sxm-141gb",
        "repeat_medians_gbps": [4200.0, 4210.0, 4190.0],
        "plateau_gbps": 4205.0,
    }
    return {**base, **over}


@pytest.mark.parametrize(
    "over, status",
    [
        ({}, "pass"),
        ({"repeat_spread": 0.07, "repeat_verdict": "fail"}, "fail"),
        ({"known_good_ratio": 0.80}, "fail"),
        ({"known_good_ratio": None}, "incomplete"),  # a GPU with no known-good: cannot be judged, never fail
        ({"known_good_ratio": None, "device": "cpu", "sku_id": None}, "skip"),  # a CPU: there is none to have
        ({"known_good_ratio": None, "device": "cpu", "repeat_spread": 0.25}, "fail"),  # the spread is judged anyway
    ],
)
def test_bandwidth_criterion(over, status):
    judgement = judge_lab(lab.judge_bandwidth, view({"bandwidth": bandwidth(**over)}))
    assert judgement.status == status
    if over.get("known_good_ratio", 1) is None and status != "fail":
        assert any("cannot be made" in e for e in judgement.findings)


def test_not_run_and_failed_steps():
    assert judge_lab(lab.judge_health, view({}, {"health": "not_run"})).status == "incomplete"
    failed = judge_lab(lab.judge_health, view({}, {"health": "failed"}))
    assert failed.status == "fail" and "because" in failed.findings[0]
    assert judge_lab(lab.judge_precision, view({})).status == "incomplete"  # not in the run at all


@pytest.mark.parametrize(
    "curves, limitations, status",
    [
        ({"normal": {"knee_bytes": 65536}, "p2p_disabled": {"knee_bytes": 131072}}, [], "pass"),
        ({"normal": {"knee_bytes": 65536}}, ["P2P-disabled control curve"], "pass"),
        ({}, ["one GPU: no all-reduce"], "pass"),
        ({"normal": {"knee_bytes": None}}, [], "fail"),
    ],
)
def test_allreduce_criterion(curves, limitations, status):
    figures = {"allreduce": {"backend": "nccl", "world_size": 2, "curves": curves, "limitations": limitations}}
    assert judge_lab(lab.judge_allreduce, view(figures)).status == status


@pytest.mark.parametrize(
    "tensors, explanations, status",
    [
        ({"embedding": "a", "attention": "b", "mlp": "c"}, {"range": 1, "outlier": 0, "reversal": 0}, "pass"),
        ({"embedding": "a", "attention": "b"}, {"range": 2}, "fail"),
        ({"embedding": "a", "attention": "b", "mlp": "c"}, {"range": 0, "outlier": 0, "reversal": 0}, "fail"),
    ],
)
def test_precision_criterion(tensors, explanations, status):
    figures = {"precision": {"tensors": tensors, "explanations": explanations}}
    assert judge_lab(lab.judge_precision, view(figures)).status == status


def test_roofline_must_use_the_fed_bandwidth_and_the_catalogue_peak():
    peak = catalogue.by_id("h200-sxm-141gb")["published"]["dense_tflops"]["bf16"]
    roof = {
        "dtype": "bf16",
        "bandwidth_gbps": 4200.0,
        "peak_tflops": peak,
        "all_explained": True,
        "classifications": {"square-4096": "compute"},
    }
    # the bandwidth step's median recomputed from its repeat times decides, not the stored input
    measured = {"roofline": roof, "bandwidth": bandwidth(repeat_median_gbps=4200.0)}
    assert (
        judge_lab(lab.judge_roofline, view(measured, inputs={"roofline": {"bandwidth_gbps": 3000.0}})).status == "pass"
    )
    other = {"roofline": roof, "bandwidth": bandwidth(repeat_median_gbps=3000.0)}
    judged = judge_lab(lab.judge_roofline, view(other, inputs={"roofline": {"bandwidth_gbps": 4200.0}}))
    assert judged.status == "fail" and any("3000 GB/s" in e and e.endswith(": no.") for e in judged.findings)
    alone = judge_lab(lab.judge_roofline, view({"roofline": roof}))
    assert alone.status == "fail" and any("cannot be shown" in e for e in alone.findings)
    wrong_peak = {**measured, "roofline": {**roof, "peak_tflops": peak * 2}}
    assert judge_lab(lab.judge_roofline, view(wrong_peak)).status == "fail"
    unexplained = {**measured, "roofline": {**roof, "all_explained": False}}
    assert judge_lab(lab.judge_roofline, view(unexplained)).status == "fail"


@pytest.mark.parametrize(
    "checks, verdict, status",
    [
        (
            [{"name": "clocks_rose", "status": "pass"}, {"name": "no_unexpected_process", "status": "pass"}],
            "pass",
            "pass",
        ),
        ([{"name": "clocks_rose", "status": "fail"}], "fail", "fail"),
        ([{"name": "load_ran", "status": "not-applicable"}], "pass", "skip"),
    ],
)
def test_idle_load_criterion(checks, verdict, status):
    v = view({}, {"health-diff": "completed"}, documents={"health-diff": {"checks": checks, "verdict": verdict}})
    assert judge_lab(lab.judge_idle_load, v).status == status


def test_units_come_from_the_key():
    assert value_text("plateau_gbps", 4213.456) == "4213.5 GB/s"
    assert value_text("repeat_spread", 0.0123) == "0.0123 (1.23 %)"
    assert value_text("knee_bytes", 200090.4) == "200090 bytes"
    assert value_text("repeat_medians_gbps", [1.0, 2.5]) == "1, 2.5 GB/s"
    assert value_text("driver", {"unavailable": "NVML not found"}) == "unavailable (NVML not found)"


def test_diff_gives_ratios_a_tolerance_widened_by_each_sides_spread_and_a_verdict():
    a = view({"bandwidth": bandwidth(), "health": {"driver_version": "580.159.04", "devices": []}})
    b = view(
        {
            "bandwidth": bandwidth(plateau_gbps=4625.5, repeat_spread=0.01),
            "health": {"driver_version": "570.86.15", "devices": []},
        }
    )
    comparison = compare(a, b)
    plateau = next(m for m in comparison.metrics if m.metric == "bandwidth plateau")
    assert plateau.ratio == pytest.approx(1.1) and (plateau.a_spread, plateau.b_spread) == (0.02, 0.01)
    lines = comparison_text(comparison, "a", "b").splitlines()
    assert next(line for line in lines if "driver_version" in line).split() == [
        "driver_version",
        "580.159.04",
        "570.86.15",
    ]
    plateau_row = next(line for line in lines if line.lstrip().startswith("bandwidth plateau"))
    # the tolerance: the steady bound (2%, no SKU identified: a stated default) widened by each side's spread
    assert plateau.tolerance == pytest.approx(0.02 + 0.02 + 0.01) and plateau.verdict == "not_reproduced"
    assert plateau_row.split()[-5:] == ["1.1000", "+-5.00", "%", "NOT", "REPRODUCED"]
