"""A step run beside a later one (ProbeStep.beside, harness.run.beside): it waits in its place, starts at the
later step's first measured progress, with fewer threads and a lower priority, and is recorded in its own
place; where the host would not be idle, or the runner's processes are not the host's, it runs in its place.
The precision step runs so beside the stress step on a GPU run, and computes on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bundle.read import read_all
from harness.registry import precision as precision_entry
from harness.registry.steps import RunState
from harness.run.beside import NICE, beside_threads
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import quiet_display

FIXTURES = Path(__file__).parents[1] / "fixtures"


def run(tmp_path, plan, runner):
    return collect(RunOptions(output_dir=tmp_path), runner, "tests", plan, display=quiet_display(len(plan)))


def test_a_step_beside_a_later_one_runs_during_its_measurement_and_is_recorded_in_its_place(tmp_path, monkeypatch):
    monkeypatch.setenv("DOSSIER_TEST_MARKER", str(tmp_path / "marker"))  # the measurement waits for it
    record = run(tmp_path, test_plan.beside_plan(), LocalRunner(package=test_plan.PACKAGE))
    work, measured = record.steps
    assert [s.step for s in record.steps] == ["cpu-work", "measures"]
    assert work.status == measured.status == "completed"
    assert measured.document["beside_seen"] is True  # the host work ran while the measurement ran
    assert measured.run.started_at < work.run.started_at  # after the measurement's first measured second
    assert work.document["nice"] == NICE and work.document["threads"] == str(beside_threads())
    assert work.run.env["OMP_NUM_THREADS"] == str(beside_threads())  # recorded with the run
    assert work.inputs["ran_beside"].startswith("measures: started at its first measured second")


class ContainerLike(LocalRunner):
    host_pids = False


@pytest.mark.parametrize(
    "when, runner_class",
    [(lambda state: "the host is busy then", LocalRunner), (lambda state: None, ContainerLike)],
    ids=["host-not-idle", "container-like"],
)
def test_otherwise_the_step_runs_in_its_place(tmp_path, when, runner_class):
    record = run(tmp_path, test_plan.beside_plan(when), runner_class(package=test_plan.PACKAGE))
    work, measured = record.steps
    assert work.status == measured.status == "completed" and work.run.finished_at <= measured.run.started_at
    assert "ran_beside" not in work.inputs and work.document["nice"] == 0 and work.document["threads"] is None


def test_a_step_whose_later_step_is_skipped_still_runs(tmp_path):
    record = collect(
        RunOptions(output_dir=tmp_path, skip=("measures",)),
        LocalRunner(package=test_plan.PACKAGE),
        "tests",
        test_plan.beside_plan(),
        display=quiet_display(2),
    )
    assert [(s.step, s.status) for s in record.steps] == [("cpu-work", "completed"), ("measures", "not_run")]


def _health(bundle: str) -> dict:
    return json.loads(read_all(FIXTURES / bundle)["raw/health.json"])


def test_precision_runs_beside_stress_on_a_gpu_run_and_computes_on_the_cpu():
    (step,) = precision_entry.SPEC.steps
    assert step.beside == "stress" and step.order < 90  # its place in the plan (and the report) is unchanged
    gpu, cpu = RunState(), RunState()
    gpu.add("health", _health("h200/dossier-h200-full.tar.gz"), "health")
    assert step.beside_when(gpu) is None
    assert "no devices" in step.beside_when(cpu)
    cpu.add("health", {"torch_device_count": 0, "device_view_source": "CUDA driver API"}, "health")
    assert step.beside_when(cpu).startswith("no GPU visible to CUDA")
    assert beside_threads(16) == 12 and beside_threads(2) == 1
