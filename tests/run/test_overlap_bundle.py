"""A real dossier whose steps ran ahead and beside, assembled, signed and verified: the precision step run
beside the stress step (its `beside_when` made to say yes on this CPU, as health says on a GPU host) and the
bandwidth and stress steps' processes started ahead when health started (NVML made to see a GPU),
with the roofline, all-reduce and transfer steps skipped to keep it short. Every check `dossier verify`
makes passes on the bundle such a run writes: the order of its steps, their records, notes and inputs."""

from __future__ import annotations

import dataclasses

from harness.registry import lab_plan
from harness.run import prestart as prestart_module
from harness.run.assemble import assemble
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from harness.verify import verify_and_view
from tests.bundle_support import make_key, quiet_display

SKIPPED = ("roofline", "allreduce", "transfer")


def test_a_run_with_steps_ahead_and_beside_writes_a_bundle_that_verifies(tmp_path, monkeypatch):
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(prestart_module, "nvml_sees_a_gpu", lambda: True)
    plan = tuple(
        dataclasses.replace(step, beside_when=lambda state: None) if step.step == "precision" else step
        for step in lab_plan()
    )
    record = collect(
        RunOptions(output_dir=tmp_path, skip=SKIPPED), LocalRunner(), "tests", plan, display=quiet_display(len(plan))
    )
    steps = {s.step: s for s in record.steps}
    assert [s.step for s in record.steps] == [s.step for s in plan]  # the plan's order, beside or not
    assert steps["precision"].status == "completed" and steps["precision"].document["device"] == "cpu"
    assert steps["precision"].inputs["ran_beside"].startswith("stress: started at its first measured second")
    assert steps["precision"].run.started_at > steps["stress"].run.started_at
    assert steps["health"].run.note is None  # the first step starts its own process
    for name in ("bandwidth", "stress"):  # the next two probe steps not skipped, started when health started
        assert steps[name].run.note.startswith("started ahead of its step"), name
    assert "stress: worker 0 was started ahead at " in steps["stress"].run.stderr.decode()
    key, public = make_key(tmp_path / "keys")
    bundle = tmp_path / "overlap.tar.gz"
    bundle.write_bytes(assemble(record, key))
    result, view = verify_and_view(bundle, key.public)
    assert result.ok, [check.line() for check in result.failures]
