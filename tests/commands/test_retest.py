"""`dossier run --retest N`: a failed probe step runs again; every attempt is kept in the bundle, the
bundle verifies, the report says which attempt passed, and acceptance counts a late pass as the
profile says (WARN by default)."""

import dataclasses
import json

import pytest

from harness import registry
from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from harness.registry.steps import ProbeStep, StepArgs
from harness.run.assemble import assemble, unsigned_files
from harness.run.orchestrate import RunOptions, collect
from harness.run.records import FAILED, Attempt
from harness.runners.local import LocalRunner
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.accept_support import apply_file, h200_documents, record, resolve
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import make_key, quiet_display

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

SXM = "h200-sxm-141gb"


def flaky_plan(state, fail_times):
    def arguments(_state):
        return StepArgs(("--state", str(state), "--fail-times", str(fail_times)))

    return (
        ProbeStep(
            "flaky",
            "flaky",
            "Fails first (test)",
            "test",
            schema="common",
            analysis=None,
            plots=None,
            timeout_s=60,
            arguments=arguments,
        ),
    )


def run(tmp_path, fail_times, retest):
    plan = flaky_plan(tmp_path / "state", fail_times)
    return collect(
        RunOptions(output_dir=tmp_path, retest=retest),
        LocalRunner(package=test_plan.PACKAGE),
        "tests: the test-only probe package",
        plan,
        display=quiet_display(len(plan)),
    )


def test_a_step_that_fails_once_passes_on_attempt_two_and_keeps_attempt_one(tmp_path, monkeypatch):
    test_plan.install_flaky(monkeypatch)  # verify checks the completed step by its probe's registry entry
    recorded = run(tmp_path, fail_times=1, retest=2)
    [step] = recorded.steps
    assert step.status == "completed" and step.document["runs"] == 2
    [first] = step.attempts
    assert first.attempt == 1 and "exited with code 3" in first.why and first.run.exit_code == 3
    key, public = make_key(tmp_path / "k")
    bundle = tmp_path / "flaky.tar.gz"
    bundle.write_bytes(assemble(recorded, key))
    assert verify_bundle(bundle, load_public(public)).ok
    files = read_all(bundle)
    commands = json.loads(files["commands.json"])
    assert commands["options"]["retest"] == 2
    [entry] = commands["steps"]
    [attempt] = entry["attempts"]
    assert attempt["attempt"] == 1 and attempt["status"] == "failed" and attempt["exit_code"] == 3
    assert attempt["stdout"] in files  # nothing lost: the failed attempt's own stdout and stderr are members
    assert b"run 1: the link dropped" in files[attempt["stderr"]]
    assert b"run 1" not in files[entry["stderr"]]  # the last attempt's stderr is its own
    assert entry["status"] == "completed" and json.loads(files[entry["output"]])["runs"] == 2
    assert "attempt 2 of 3 (attempt 1: exited with code 3)" in files["report.md"].decode()


def test_a_step_that_fails_every_attempt_is_failed_with_every_attempt_kept(tmp_path):
    recorded = run(tmp_path, fail_times=5, retest=2)
    [step] = recorded.steps
    assert step.status == "failed" and [a.attempt for a in step.attempts] == [1, 2]
    key, _ = make_key(tmp_path / "k")
    bundle = tmp_path / "failed.tar.gz"
    bundle.write_bytes(assemble(recorded, key))
    names = set(read_all(bundle))
    assert {"logs/flaky.attempt1.stdout.txt", "logs/flaky.attempt2.stderr.txt", "logs/flaky.stdout.txt"} <= names


def test_without_retest_a_failure_is_recorded_once_and_commands_json_is_as_before(tmp_path):
    recorded = run(tmp_path, fail_times=1, retest=0)
    [step] = recorded.steps
    assert step.status == "failed" and step.attempts == ()
    assert "retest" not in recorded.options
    key, _ = make_key(tmp_path / "k")
    bundle = tmp_path / "once.tar.gz"
    bundle.write_bytes(assemble(recorded, key))
    assert "attempts" not in json.loads(read_all(bundle)["commands.json"])["steps"][0]


def retested_view(step="bandwidth", passed=True):
    """The recorded H200 documents with STEP having failed once before (a real earlier attempt's record
    is not available, so its run is this step's own run, recorded as failed with exit code 3)."""
    base = record(h200_documents())
    steps = []
    for s in base.steps:
        if s.step == step:
            failed = dataclasses.replace(s.run, exit_code=3, stdout=b'{"partial": \n', stderr=b"link dropped\n")
            s = dataclasses.replace(s, attempts=(Attempt(1, failed, "exited with code 3"),))
            if not passed:
                s = dataclasses.replace(s, status=FAILED, why="exited with code 3", document=None, run=failed)
        steps.append(s)
    recorded = dataclasses.replace(base, steps=tuple(steps), options={**base.options, "retest": 2})
    return BundleView.from_files(unsigned_files(recorded), registry.analysis_module)


def judged(view, profile):
    return {r.name: r for r in evaluate(BundleFacts(view), profile, CRITERIA)}


def test_a_pass_on_attempt_two_is_warn_by_default_naming_the_attempts():
    results = judged(retested_view(), resolve(SXM))
    plateau = results["bandwidth_plateau"]
    assert plateau.status == Verdict.WARN
    assert "bandwidth passed on attempt 2 of 3 (attempt 1: exited with code 3)" in plateau.why
    assert results["ecc_uncorrectable_zero"].status == Verdict.PASS  # not from the retested step


@pytest.mark.parametrize("counts_as, status", [("pass", Verdict.PASS), ("fail", Verdict.FAIL), ("warn", Verdict.WARN)])
def test_the_profile_says_what_a_retest_counts_as(counts_as, status):
    profile = apply_file(resolve(SXM), {"sku_id": SXM, "thresholds": {"retest_verdict": counts_as}}, "test profile")
    assert judged(retested_view(), profile)["bandwidth_plateau"].status == status


def test_a_step_that_failed_every_attempt_says_so_and_a_required_criterion_is_incomplete():
    results = judged(retested_view(passed=False), resolve(SXM))
    plateau = results["bandwidth_plateau"]
    assert plateau.status == Verdict.INCOMPLETE and "bandwidth failed on every attempt (2 of 3" in plateau.why


def test_retest_is_refused_outside_its_range(tmp_path, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["run", "--retest", "11", "--output-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and err.count("\n") == 1
    assert "argument --retest: 11 is not from 0 to 10 (a step failing more often is failing, not flaky)" in err
