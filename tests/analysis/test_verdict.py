"""The one verdict vocabulary (harness/analysis/verdict.py): its words, how documents' earlier
words are read, the overall verdict of a set, and the exit code every command gives it."""

import json

import pytest

from harness.analysis.verdict import EXIT_INCOMPLETE, Verdict, overall, parse, recorded
from harness.cli import main
from tests.accept_support import h200_documents, write_bundle
from tests.bundle_support import make_key

P, W, F, I, S = Verdict.PASS, Verdict.WARN, Verdict.FAIL, Verdict.INCOMPLETE, Verdict.SKIP  # noqa: E741 - the verdicts' initials, read as truth tables


def test_values_are_lowercase_in_json_and_shown_uppercase():
    assert json.dumps([P, W, F, I, S]) == '["pass", "warn", "fail", "incomplete", "skip"]'
    assert [v.shown for v in (P, I)] == ["PASS", "INCOMPLETE"] and repr(S) == "'skip'"


@pytest.mark.parametrize(
    "word, required, verdict",
    [
        ("pass", True, P),
        ("fail", True, F),
        ("warn", True, W),
        ("incomplete", True, I),
        ("skip", False, S),
        ("not-measured", True, I),
        ("not-measured", False, S),
        ("not-applicable", True, S),
        ("PASSED", True, P),
        ("WARNED", True, W),
        ("FAILED", True, F),
    ],
)
def test_parse_reads_every_word_documents_record(word, required, verdict):
    assert parse(word, required) is verdict


def test_parse_refuses_a_word_that_is_no_verdict_and_recorded_keeps_the_schemas_words():
    with pytest.raises(ValueError):
        parse("not run")
    assert [recorded(v) for v in (P, F, I, S)] == ["pass", "fail", "not-measured", "not-applicable"]


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([P, W, F, I, S], F),
        ([P, W, I, S], I),
        ([P, W, S], W),
        ([P, S], P),
        ([S, S], I),
        ([], I),
        (["pass", "not-applicable"], P),
        (["pass", "not-measured"], I),
    ],
)
def test_overall_fails_closed(verdicts, expected):
    assert overall(verdicts) is expected


def test_exit_codes_are_the_same_everywhere():
    assert {v: v.exit_code for v in Verdict} == {P: 0, W: 0, F: 1, I: EXIT_INCOMPLETE, S: 0} and EXIT_INCOMPLETE == 5


def test_an_acceptance_missing_a_required_criterion_is_incomplete_exit_5(tmp_path, capsys):
    """Nothing failed, but the profile requires the under-load criteria and the bundle has no
    health-load step: dossier accept fails closed."""
    key, public = make_key(tmp_path / "k")
    documents = h200_documents()
    del documents["health-load"]
    bundle = write_bundle(tmp_path / "no-load.tar.gz", documents, key)
    code = main(["accept", str(bundle), "--profile", "h200-sxm-141gb", "--key", str(public), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 5 and result["result"] == "incomplete" and result["failed"] == []
    assert set(result["incomplete"]) == {
        "pcie_link_at_max_under_load",
        "clocks_rise_under_load",
        "no_unexpected_process",
    }
