"""The configuration audit (harness.judge.acceptance.config) on real health.json captures: the lent
H200's `dossier health` (tests/fixtures/h200/health.idle.json: one GPU in a VM, NVLink NotSupported)
and the two-H200 machine's (tests/fixtures/h200x2/health.json: 18 active NVLink links per GPU). Each
fail path changes one recorded fact (EDITED, named in the test) and nothing else."""

import copy
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.config import version_key
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from tests.accept_support import apply_file, resolve, view_of

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

FIXTURES = Path(__file__).parents[1] / "fixtures"
SXM = "h200-sxm-141gb"
CONFIG = (
    "config_driver",
    "config_cuda",
    "config_persistence",
    "config_mig",
    "config_power_limit",
    "config_application_clocks",
    "config_nvlink",
)


def health(name="h200/health.idle.json", edit=None):
    document = json.loads((FIXTURES / name).read_text())
    if edit:
        document = copy.deepcopy(document)
        edit(document)
    return document


def with_config(**config):
    return apply_file(resolve(SXM), {"sku_id": SXM, "thresholds": {"config": config}}, "test profile")


def judged(document, profile=None):
    results = evaluate(BundleFacts(view_of({"health": document})), profile or resolve(SXM), CRITERIA)
    return {r.name: r for r in results if r.name in CONFIG}


def test_the_two_h200s_pass_every_expectation_the_catalogue_states():
    results = judged(health("h200x2/health.json"), with_config(driver_min="580.65.06", cuda_min="12.8"))
    assert {n: r.status for n, r in results.items()} == dict.fromkeys(CONFIG, Verdict.PASS)
    assert (
        results["config_nvlink"].measured.text == "GPU0 18 of 18 NVLink links active; GPU1 18 of 18 NVLink links active"
    )
    assert "580.159.04 is at or above 580.65.06" in results["config_driver"].why


def test_an_expectation_the_profile_does_not_state_is_skipped_saying_so():
    results = judged(health())
    assert (
        results["config_driver"].status == Verdict.SKIP
        and "states no config.driver_min" in results["config_driver"].why
    )


def test_nvlink_unreadable_in_a_vm_is_skipped_with_nvmls_reason_or_incomplete_when_required():
    row = judged(health())["config_nvlink"]
    assert row.status == Verdict.SKIP and "NVMLError_NotSupported" in row.why
    required = apply_file(resolve(SXM), {"sku_id": SXM, "required": ["config_nvlink"]}, "test profile")
    assert judged(health(), required)["config_nvlink"].status == Verdict.INCOMPLETE


def _set(path, value):
    def edit(document):
        target = document["devices"][0]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    "criterion, edit, words",
    [
        ("config_persistence", _set(("modes", "persistence"), "disabled"), "persistence is disabled, expected enabled"),
        ("config_mig", _set(("modes", "mig_pending"), "enabled"), "mig pending is enabled, expected disabled"),
        (
            "config_power_limit",
            _set(("power", "enforced_limit_w"), 600.0),
            "enforced power limit 600 W below default 700 W",
        ),
        (
            "config_application_clocks",
            _set(("clocks", "applications_graphics_mhz"), 1755),
            "graphics application clock 1755 MHz below its default 1980 MHz",
        ),
    ],
)
def test_each_setting_changed_from_the_expected_fails_naming_it(criterion, edit, words):
    row = judged(health(edit=edit))[criterion]  # EDITED: the one fact the parameter names
    assert row.status == Verdict.FAIL and words in row.why and row.why.startswith("GPU0")


def test_an_nvlink_link_down_fails_naming_it():
    def link_down(document):  # EDITED: link 5 of GPU1 inactive
        document["devices"][1]["nvlink"][5]["active"] = False

    row = judged(health("h200x2/health.json", link_down))["config_nvlink"]
    assert row.status == Verdict.FAIL and row.why == "GPU1: links [5] inactive"


def test_a_driver_below_the_minimum_fails():
    row = judged(health(), with_config(driver_min="580.160"))["config_driver"]
    assert row.status == Verdict.FAIL and "580.159.04 is below 580.160" in row.why


def test_versions_compare_number_by_number():
    assert version_key("580.159.04") > version_key("580.65.06") and version_key("13.0") >= version_key("12.8")
