"""`dossier retest FAILED --against GOOD` on real bundles made here (issue 39): dossiers of this machine's
CPU, the health step only (the others left out, as `dossier run --skip` records them). FAILED's health
step really fails: it ran with a 1 ms time limit and was killed (what a hung probe gives). The retest
runs only that step again, with FAILED's own argv, and judges its figures against GOOD with the
reproduce rule: RESOLVED when the step runs as it should; UNRESOLVED when the limit still kills it (the
registry's health step given the same 1 ms), and a second UNRESOLVED retest of the same failure
escalates FAILED's action (RERUN_IDLE, step.failed) one step (RESET_GPU)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.actions import Action
from harness.bundle.read import read_all
from harness.cli import main
from harness.judge import retest as judging
from harness.run.assemble import assemble
from harness.run.orchestrate import RunOptions, collect
from harness.run.plan import LAB_PLAN
from harness.runners.local import LocalRunner
from harness.signing.keys import load_public
from tests.bundle_support import make_key, quiet_display

ONLY = "health"
KILLED_AFTER_S = 0.001


def killed(plan):
    return tuple(dataclasses.replace(s, timeout_s=KILLED_AFTER_S) if s.step == ONLY else s for s in plan)


def dossier(path: Path, key, plan=LAB_PLAN) -> Path:
    skip = tuple(s.step for s in plan if s.step != ONLY)
    record = collect(
        RunOptions(output_dir=path.parent, skip=skip),
        LocalRunner(),
        "tests: this machine's CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    path.write_bytes(assemble(record, key))
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("retest")
    key, public = make_key(tmp / "key")
    good = dossier(tmp / "good.tar.gz", key)
    failed = dossier(tmp / "failed.tar.gz", key, killed(LAB_PLAN))
    return tmp, key, public, good, failed


def retest(made, out: Path, *extra: str) -> int:
    tmp, key, public, good, failed = made
    code = main(
        [
            "retest",
            str(failed),
            "--key",
            str(public),
            "--against",
            str(good),
            "--output-dir",
            str(out),
            "--signing-key",
            str(key.path),
            "--json",
            *extra,
        ]
    )
    return code


def predicate(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out[out.index("{") :])


def test_the_failed_step_alone_runs_again_and_resolves_against_the_good_bundle(made, tmp_path, capsys):
    tmp, key, public, good, failed = made
    capsys.readouterr()
    code = retest(made, tmp_path)
    said = predicate(capsys)
    assert code == 0 and said["verdict"] == judging.RESOLVED, said["why"]
    assert said["steps"] == [ONLY] and said["failed_criteria"] == [ONLY]
    assert said["failed_action"]["action"] == Action.RERUN_IDLE and said["failed_action"]["rule"] == "step.failed"
    assert said["action"]["action"] == Action.NONE and said["not_reproduced"] == []
    assert said["reproduced"] and all(f.startswith("health.") for f in said["reproduced"])
    statements = list(tmp_path.glob("retest-failed-1.intoto.json"))
    stmt = judging.verify(statements[0].read_bytes(), load_public(public))
    assert {s["name"].split("/")[0] for s in stmt["subject"]} == {"failed", "retest", "good"}
    bundle = tmp_path / "retest-failed-1.tar.gz"
    commands = json.loads(read_all(bundle)["commands.json"])
    ran = [s["step"] for s in commands["steps"] if s["status"] == "completed"]
    assert ran == [ONLY]  # only the failed step ran; every other one is recorded as left out


def test_a_failure_that_holds_is_unresolved_and_a_second_time_escalates(made, tmp_path, capsys, monkeypatch):
    killed_plan = killed(registry.lab_plan())
    monkeypatch.setattr(registry, "lab_plan", lambda: killed_plan)  # the step still dies on the retest
    capsys.readouterr()
    code = retest(made, tmp_path)
    first = predicate(capsys)
    assert code == 1 and first["verdict"] == judging.UNRESOLVED and first["still_failing"] == [ONLY]
    assert first["action"]["action"] == Action.RERUN_IDLE and first["action"]["rule"] == "retest.unresolved"
    code = retest(made, tmp_path)
    second = predicate(capsys)
    assert code == 1 and second["earlier_unresolved"] == 1
    assert second["action"]["action"] == Action.RESET_GPU and second["action"]["rule"] == "retest.escalated"
    assert sorted(p.name for p in tmp_path.glob("retest-*.intoto.json")) == [
        "retest-failed-1.intoto.json",
        "retest-failed-2.intoto.json",
    ]


def test_a_bundle_that_did_not_fail_is_not_retested(made, tmp_path, capsys):
    tmp, key, public, good, failed = made
    code = main(
        ["retest", str(good), "--key", str(public), "--against", str(good), "--output-dir", str(tmp_path)]
        + ["--signing-key", str(key.path)]
    )
    assert code == 2 and "nothing that failed" in capsys.readouterr().err
