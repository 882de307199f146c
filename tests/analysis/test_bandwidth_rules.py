"""The bandwidth criteria, each written once (harness.analysis.bandwidth) and used by the report and
by acceptance: the lab's 5% spread is strict, the lab's 15% is two-sided, acceptance's floor is
one-sided. Inputs at and around each boundary; both users give the same answer as the rule."""

import pytest

from harness import registry
from harness.analysis.bandwidth import figures as bw
from harness.analysis.verdict import Verdict
from harness.judge import lab
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from tests.accept_support import apply_file, h200_bandwidth, h200_documents, resolve, view_of
from tests.present.test_report_criteria import bandwidth as bandwidth_figures
from tests.present.test_report_criteria import judge_lab, view

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them


@pytest.mark.parametrize("spread, agree", [(0.0, True), (0.0499, True), (0.05, False), (0.06, False)])
def test_the_lab_spread_is_strictly_less_than_5_percent(spread, agree):
    assert bw.repeats_agree(spread) is agree
    judged = judge_lab(lab.judge_bandwidth, view({"bandwidth": bandwidth_figures(repeat_spread=spread)}))
    assert (judged.status == "pass") is agree


@pytest.mark.parametrize("ratio, within", [(0.85, True), (0.849, False), (1.15, True), (1.151, False), (1.0, True)])
def test_the_lab_known_good_rule_is_within_15_percent_either_side(ratio, within):
    assert bw.within_known_good(ratio) is within
    judged = judge_lab(lab.judge_bandwidth, view({"bandwidth": bandwidth_figures(known_good_ratio=ratio)}))
    assert (judged.status == "pass") is within


def test_the_acceptance_floor_is_one_sided():
    assert bw.meets_known_good_floor(0.85 * 4234, 4234, 0.85)
    assert not bw.meets_known_good_floor(0.849 * 4234, 4234, 0.85)
    assert bw.meets_known_good_floor(1.3 * 4234, 4234, 0.85)  # faster than the known-good unit


def _accept(documents):
    return {r.name: r for r in evaluate(BundleFacts(view_of(documents)), resolve("h200-sxm-141gb"), CRITERIA)}


def test_a_card_20_percent_faster_fails_the_lab_but_passes_the_buyers_floor():
    documents = {**h200_documents(), "bandwidth": h200_bandwidth(scale=1.2)}
    facts = view_of(documents)
    assert facts.figures("bandwidth").values["known_good_ratio"] == pytest.approx(1.2 * 4254 / 4234)
    assert judge_lab(lab.judge_bandwidth, facts).status == "fail"  # the lab: "within 15%"
    accepted = _accept(documents)["bandwidth_plateau"]
    assert accepted.status == Verdict.PASS and bw.KNOWN_GOOD_FLOOR_SOURCE in accepted.why


def test_a_spread_at_exactly_the_limit_fails_in_both():
    s = bw.REPEAT_SPREAD_MAX
    judged = judge_lab(lab.judge_bandwidth, view({"bandwidth": bandwidth_figures(repeat_spread=s)}))
    assert judged.status == "fail"
    documents = h200_documents()
    measured = view_of(documents).figures("bandwidth").values["repeat_spread"]
    at_limit = apply_file(
        resolve("h200-sxm-141gb"),
        {"sku_id": "h200-sxm-141gb", "thresholds": {"repeat_spread_max": measured}},
        "test profile",
    )
    row = {r.name: r for r in evaluate(BundleFacts(view_of(documents)), at_limit, CRITERIA)}["repeat_spread"]
    assert row.status == Verdict.FAIL and row.measured.value == measured
    assert _accept(documents)["repeat_spread"].status == Verdict.PASS  # the same spread under the catalogue's 5%
