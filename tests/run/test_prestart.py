"""`dossier run`'s prestart (harness.run.prestart): the next probe steps' processes start while the current
one runs, import their packages, and run their probe only when their own step starts, recorded as the probe's
own command with a note saying so; one whose step does not run is ended. On a CPU run nothing is prestarted."""

from __future__ import annotations

import json
import sys

import pytest

from harness.run import prestart as prestart_module
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from harness.runners.prestart import Prestarted
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import quiet_display


def run(tmp_path, plan, monkeypatch, gpu: bool):
    monkeypatch.setattr(prestart_module, "nvml_sees_a_gpu", lambda: gpu)
    return collect(
        RunOptions(output_dir=tmp_path), LocalRunner(package=test_plan.PACKAGE), "tests", plan, display=quiet_display(5)
    )


def test_on_a_gpu_run_each_probe_after_the_first_was_started_ahead_and_ran_as_its_own_command(tmp_path, monkeypatch):
    started = []
    original = LocalRunner.prestart
    monkeypatch.setattr(LocalRunner, "prestart", lambda self, *a: started.append(a[0]) or original(self, *a))
    record = run(tmp_path, test_plan.PLAN, monkeypatch, gpu=True)
    steps = {s.step: s for s in record.steps}
    assert [s.status for s in record.steps] == ["completed", "failed", "completed", "not_run", "not_run"]
    assert steps["tick"].run.note is None  # the first step starts its own process
    for name in ("fails", "tock"):
        note = steps[name].run.note
        assert note.startswith("started ahead of its step at ") and "touching no GPU" in note
        assert steps[name].run.argv[1:3] == ("-m", f"{test_plan.PACKAGE}.{steps[name].probe}")
    assert steps["tock"].document["argv"] == ["--label", f"after-{steps['tick'].document['label']}"]
    assert steps["tock"].inputs == {"after": steps["tick"].document["label"]}
    assert started == ["fails", "tick", "tick"]  # tock and orphan (the same probe) ahead; orphan's was ended


def test_on_a_cpu_run_nothing_is_started_ahead(tmp_path, monkeypatch):
    record = run(tmp_path, test_plan.PLAN, monkeypatch, gpu=False)
    assert all(s.run.note is None for s in record.steps if s.run is not None)


def test_a_prestarted_process_runs_the_probe_when_released_and_ends_when_discarded(tmp_path):
    runner = LocalRunner(package=test_plan.PACKAGE)
    warm = runner.prestart("tick", ("json",))
    assert warm.usable(f"{test_plan.PACKAGE}.tick", runner.environment(_invocation()))
    assert not warm.usable(f"{test_plan.PACKAGE}.tick", {**runner.environment(_invocation()), "X": "1"})
    ran = runner.run(_invocation("--label", "warm"), warm=warm)
    assert ran.exit_code == 0 and json.loads(ran.stdout)["label"] == "warm" and ran.note.startswith("started ahead")
    idle = runner.prestart("tick")
    idle.discard()
    assert idle.proc.returncode == 0  # its empty stdin ended it
    dead = Prestarted.start(sys.executable, "no.such.module", (), runner.environment(_invocation()))
    dead.proc.wait()
    cold = runner.run(_invocation("--label", "cold"), warm=dead)  # it could not import: started anew
    assert cold.exit_code == 0 and cold.note is None and json.loads(cold.stdout)["label"] == "cold"


def _invocation(*args):
    from harness.runners.interface import ProbeInvocation

    return ProbeInvocation("tick", tuple(args), 60)


@pytest.mark.parametrize("argv", [[], ["json"]])
def test_the_launcher_refuses_no_module_and_ends_on_an_empty_stdin(argv, monkeypatch, capsys):
    from harness.probes import prestart

    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(""))
    assert prestart.main(argv) == (2 if not argv else 0)


def test_the_stress_probe_started_ahead_starts_its_first_worker_ahead_too(tmp_path):
    """The launcher calls the stress package's prestart(): one worker imports torch while the probe waits; the
    probe, released, hands it its arguments and says so; a CPU run of 1 s, no memory test."""
    runner = LocalRunner()
    warm = runner.prestart("stress", ())
    ran = runner.run(_invocation_of("stress", "--seconds", "1", "--no-memory-test"), warm=warm)
    document = json.loads(ran.stdout)
    assert ran.exit_code == 0 and document["devices"][0]["status"] == "completed"
    assert "stress: worker 0 was started ahead at " in ran.stderr.decode()


def _invocation_of(probe, *args):
    from harness.runners.interface import ProbeInvocation

    return ProbeInvocation(probe, tuple(args), 120)
