"""What `dossier run` no longer spends time on, with nothing measured less: no all-reduce process where the
health step counted one GPU (the limitation is recorded, as the probe would), and health under load taken
during the stress step's load by the torch-free probe (ProbeStep.during) instead of a load of its own.
The time itself is measured on the GPU (bench/gpu_dossier.sh), never here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.health import figures as health_figures
from harness.bundle.read import read_all
from harness.registry import allreduce as allreduce_entry
from harness.registry import health as health_entry
from harness.registry.steps import NotReady, RunState
from harness.run.orchestrate import Companions, RunOptions, collect
from harness.runners.local import LocalRunner
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import quiet_display

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _health(bundle: str) -> dict:
    return json.loads(read_all(FIXTURES / bundle)["raw/health.json"])


def test_one_gpu_records_the_all_reduce_limitation_without_starting_a_probe():
    state = RunState()
    state.add("health", _health("h200/dossier-h200-full.tar.gz"), "health")
    with pytest.raises(NotReady) as why:
        allreduce_entry.allreduce_arguments(state)
    assert str(why.value).startswith("1 GPU visible to CUDA (the health step's count, CUDA driver API via ctypes")
    assert "no all-reduce process was started and none is recorded" in str(why.value)
    two = RunState(analyses=registry.analysis_module)
    two.add("health", _health("h200x2/dossier-h200x2.tar.gz"), "health")
    assert allreduce_entry.allreduce_arguments(two).args == ("--backend", "nccl")
    assert health_figures.visible_gpus({"devices": {"unavailable": "no NVML"}}) is None  # a CPU: the probe runs gloo


def test_health_under_load_reads_the_stress_load_or_runs_its_own():
    state = RunState()
    assert health_entry.load_arguments(state).args == ("--under-load", "8")  # no other load to read under
    state.loads["stress"] = {"pids": [41, 42], "what": "the stress step's bf16 GEMM", "remaining_s": 30.0}
    assert health_entry.load_arguments(state).args == (
        "--during-load",
        "41",
        "42",
        "--load-window",
        "2",
        "--load-what",
        "the stress step's bf16 GEMM",
    )
    state.loads["stress"]["remaining_s"] = 0.5  # too little left for four samples
    assert health_entry.load_arguments(state).args == ("--under-load", "8")


class ContainerLike(LocalRunner):
    host_pids = False  # its processes' ids are not the host's: a reading could not name another's


@pytest.mark.parametrize("runner_class", [LocalRunner, ContainerLike], ids=["local", "container-like"])
def test_a_step_declared_during_another_is_taken_while_it_runs_and_recorded_in_its_place(
    runner_class, tmp_path, monkeypatch
):
    marker = tmp_path / "marker"
    if runner_class is LocalRunner:
        monkeypatch.setenv("DOSSIER_TEST_MARKER", str(marker))  # the load waits for the observer's marker
    record = collect(
        RunOptions(output_dir=tmp_path),
        runner_class(package=test_plan.PACKAGE),
        "tests",
        test_plan.DURING_PLAN,
        display=quiet_display(2),
    )
    loads, observer = record.steps
    assert [s.step for s in record.steps] == ["loads", "observer"] and observer.status == "completed"
    if runner_class is LocalRunner:
        assert loads.document["companion_seen"] is True  # the observer ran while the load was on
        assert (
            observer.document["during"]
            == json.loads(
                [line for line in loads.run.stderr.decode().splitlines() if line.startswith("##load ")][0][7:]
            )["pids"]
        )
        # started while the load ran (companion_seen: its reading was taken then); the two processes' ends race,
        # each ending as soon as its document is out (contract.exit_now)
        assert loads.run.started_at < observer.run.started_at < loads.run.finished_at
    else:
        assert observer.document["during"] == [] and observer.run.started_at >= loads.run.finished_at


def test_a_step_placed_before_the_one_it_is_taken_during_runs_in_its_place():
    """A plan that puts the observer first (an older bundle's order, replayed) waits for no load: the step
    runs once, in its place, never again during the later step."""
    runner = LocalRunner(package=test_plan.PACKAGE)
    assert set(Companions(test_plan.DURING_PLAN, runner, ()).waiting) == {"observer"}
    assert Companions(tuple(reversed(test_plan.DURING_PLAN)), runner, ()).waiting == {}
    assert Companions(test_plan.DURING_PLAN, runner, ("observer",)).waiting == {}
