"""The health probe on this machine: schema-valid, fast, every missing field explained."""

import functools
import json
import time

import pytest

from harness.probes import health
from harness.probes.contract import ProbeUsageError
from harness.run.outcome import Completed, judge
from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner
from tests.h200_capture import FIXTURES, real_health_fixtures, recorded_pair


def unavailable_reasons(node, path=""):
    """Yield (path, reason) for every {"unavailable": ...} in a document."""
    if isinstance(node, dict):
        if set(node) == {"unavailable"}:
            yield path, node["unavailable"]
            return
        for key, value in node.items():
            yield from unavailable_reasons(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from unavailable_reasons(value, f"{path}/{i}")


@pytest.fixture(scope="module")
def idle_run():
    started = time.monotonic()
    run = LocalRunner().run(ProbeInvocation("health", (), 60.0))
    return run, time.monotonic() - started


def test_real_output_on_this_machine_is_schema_valid(idle_run):
    run, _ = idle_run
    outcome = judge(run)
    assert isinstance(outcome, Completed), outcome.describe()
    assert outcome.document["mode"] == "idle"
    assert outcome.document["host"]["python_version"]


def test_health_runs_in_under_5_seconds(idle_run):
    """Wall clock of the whole probe process; a second try absorbs a cold file cache."""
    elapsed = [idle_run[1]]
    if elapsed[0] >= 5.0:
        started = time.monotonic()
        LocalRunner().run(ProbeInvocation("health", (), 60.0))
        elapsed.append(time.monotonic() - started)
    assert min(elapsed) < 5.0, f"health took {elapsed} s"


@functools.cache
def documents():
    found = {"this machine": json.loads(LocalRunner().run(ProbeInvocation("health", (), 60.0)).stdout)}
    for kind in ("nvml-fields", "nvidia-smi-q"):
        for doc in recorded_pair(kind):
            found[f"{kind} {doc['mode']}"] = doc
    found.update(real_health_fixtures())
    return found


DOCUMENT_NAMES = [
    "this machine",
    "nvml-fields idle",
    "nvml-fields under_load",
    "nvidia-smi-q idle",
    "nvidia-smi-q under_load",
] + [n for n in ("health.idle.json", "health.load.json") if (FIXTURES / n).exists()]


@pytest.mark.parametrize("name", DOCUMENT_NAMES)
def test_every_unavailable_field_carries_a_reason(name):
    found = list(unavailable_reasons(documents()[name]))
    assert all(isinstance(r, str) and r.strip() for _, r in found), found


def test_the_reason_walker_can_fail():
    assert list(unavailable_reasons({"a": [{"unavailable": ""}]})) == [("/a/0", "")]


def test_no_gpu_here_names_the_cause_for_every_gpu_field(idle_run):
    document = json.loads(idle_run[0].stdout)
    if isinstance(document["devices"], list):
        pytest.skip("this host has a GPU")
    reason = document["devices"]["unavailable"]
    assert "NVML" in reason or "driver" in reason
    assert document["software"]["driver_version"]["unavailable"] == reason
    assert all(c["status"] == "not-applicable" for c in document["contracts"])
    assert any("no GPU" in lim["why"] for lim in document["limitations"])


def test_under_load_without_gpu_is_a_recorded_limitation_not_a_cpu_load():
    run = LocalRunner().run(ProbeInvocation("health", ("--under-load", "1"), 60.0))
    outcome = judge(run)
    assert isinstance(outcome, Completed), outcome.describe()
    document = outcome.document
    if isinstance(document["devices"], list):
        pytest.skip("this host has a GPU")
    assert document["mode"] == "under_load"
    assert "no GPU to load" in document["load"]["unavailable"]
    assert any(lim["what"] == "health under load" for lim in document["limitations"])


@pytest.mark.parametrize(
    "argv",
    [
        ["--under-load", "0"],
        ["--under-load", "-3"],
        ["--under-load", "1", "--sample-interval", "0.5"],
        ["--sample-interval", "0"],
    ],
)
def test_bad_arguments_are_usage_errors(argv):
    with pytest.raises(ProbeUsageError):
        health.check_args(health.build_parser().parse_args(argv))


def test_bad_arguments_exit_2_from_the_probe_process():
    run = LocalRunner().run(ProbeInvocation("health", ("--under-load", "0"), 60.0))
    assert run.exit_code == 2 and b"--under-load" in run.stderr
