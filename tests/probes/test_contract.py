"""The probe contract: failures are recorded with their raw output, never lost."""

import json

import pytest

from harness.probes.contract import attempt, unavailable
from harness.run.outcome import Failed, judge
from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner

BROKEN = LocalRunner(package="tests.broken_probes")


def run(probe, timeout_s=60.0):
    return BROKEN.run(ProbeInvocation(probe, (), timeout_s))


def test_crash_is_a_recorded_failure_with_stderr_kept():
    outcome = judge(run("crash"), schema="common")
    assert isinstance(outcome, Failed)
    assert "exited with code 1" in outcome.reason
    assert b"simulated driver failure" in outcome.run.stderr
    assert "crash" in outcome.describe()


def test_non_json_is_a_recorded_failure_with_stdout_kept():
    outcome = judge(run("nonjson"), schema="health")
    assert isinstance(outcome, Failed)
    assert "non-JSON" in outcome.reason
    assert outcome.run.stdout.startswith(b"BabelStream")


def test_schema_invalid_json_names_the_failing_schema_path():
    outcome = judge(run("badschema"), schema="health")
    assert isinstance(outcome, Failed)
    assert "schemas/health.schema.json" in outcome.reason
    paths = {v.path for v in outcome.schema_violations}
    assert "/started_at" in paths or "" in paths
    assert all(v.schema_path.startswith("/") for v in outcome.schema_violations)


def test_timeout_kills_the_probe_and_its_children():
    outcome = judge(run("sleeper", timeout_s=2.0), schema="health")
    assert isinstance(outcome, Failed)
    assert outcome.run.timed_out and outcome.run.exit_code is None
    assert "timed out" in outcome.reason


def test_stdout_noise_while_measuring_goes_to_stderr():
    probe_run = run("noisy")
    document = json.loads(probe_run.stdout)
    assert document["value"] == 1 and document["probe"] == "noisy"
    assert b"NCCL INFO" in probe_run.stderr and b"print() too" in probe_run.stderr


def test_runner_records_exact_argv_and_allowlisted_environment(monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nope")
    probe_run = run("noisy")
    assert probe_run.argv[1:] == ("-m", "tests.broken_probes.noisy")
    assert probe_run.env["NCCL_DEBUG"] == "INFO"
    assert "HF_TOKEN" not in probe_run.env and "AWS_SECRET_ACCESS_KEY" not in probe_run.env
    assert probe_run.started_at <= probe_run.finished_at


def test_unavailable_needs_a_reason():
    with pytest.raises(ValueError):
        unavailable("  ")
    assert attempt(lambda: 1 / 0) == {"unavailable": "ZeroDivisionError: division by zero"}
