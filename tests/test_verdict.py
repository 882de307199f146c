"""The one verdict vocabulary (harness.analysis.verdict): legacy values read into it, the verdict of a
set, and the one exit code for it."""

import pytest

from harness.analysis.verdict import Verdict, exit_code, from_legacy, overall


@pytest.mark.parametrize("value, required, expected", [
    ("not-measured", True, Verdict.INCOMPLETE), ("not-measured", False, Verdict.SKIP),
    ("not-applicable", True, Verdict.SKIP), ("pass", False, Verdict.PASS), ("fail", True, Verdict.FAIL),
    ("warn", False, Verdict.WARN)])
def test_legacy_values_read_into_the_vocabulary(value, required, expected):
    assert from_legacy(value, required) == expected


def test_an_unknown_value_is_refused():
    with pytest.raises(ValueError):
        from_legacy("passed")


@pytest.mark.parametrize("verdicts, expected", [
    (["pass", "warn", "skip"], Verdict.WARN), (["pass", "incomplete", "warn"], Verdict.INCOMPLETE),
    (["incomplete", "fail", "pass"], Verdict.FAIL), (["pass", "skip"], Verdict.PASS),
    (["skip", "skip"], Verdict.INCOMPLETE), ([], Verdict.INCOMPLETE), (["not-applicable", "pass"], Verdict.PASS)])
def test_the_verdict_of_a_set_fails_closed(verdicts, expected):
    assert overall(verdicts) == expected


@pytest.mark.parametrize("verdict, code", [("pass", 0), ("warn", 0), ("fail", 1), ("incomplete", 5), ("skip", 5)])
def test_one_exit_code_per_verdict(verdict, code):
    assert exit_code(verdict) == code


def test_values_are_lowercase_in_json_and_shown_uppercase():
    assert Verdict.INCOMPLETE == "incomplete" and Verdict.INCOMPLETE.shown == "INCOMPLETE"
    assert Verdict.NOT_MEASURED.shown == "SKIP"  # a legacy value shown in the vocabulary
