"""Issue 37, cases 1 and 2, end to end on this CPU: another party's plan cannot touch this machine, and a
reproduction statement cannot vouch for itself.

THEIRS is a real dossier of this CPU (health, a small bandwidth sweep, a one-shape roofline) whose signer
added `--shapes-file FILE` to the roofline step, FILE naming a credentials file of the machine that will
reproduce it (here a file made in the test, its first line a secret). `dossier reproduce THEIRS` says
before any probe runs that the option is not taken, runs the step without it, marks the step's figures
not comparable, and nothing of FILE reaches the bundle it writes (the one the workflow sends back)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

import pytest

from harness import registry
from harness.bundle.read import read_all
from harness.cli import main
from harness.registry.roofline import roofline_arguments
from harness.registry.steps import RunState, StepArgs
from harness.run.assemble import assemble
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from tests.bundle_support import make_key, quiet_display

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SMALL_BANDWIDTH = StepArgs(("--repeats", "3", "--size-mib", "1", "4", "--point-budget-s", "0.05"))
RAN = ("health", "bandwidth", "roofline")


@pytest.fixture(scope="module")
def theirs_with_a_file(tmp_path_factory):
    """(THEIRS, its public key, the credentials file its plan names)."""
    tmp = tmp_path_factory.mktemp("theirs-file")
    credentials = tmp / "home" / ".aws" / "credentials"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(f"{SECRET}\n")
    key, public = make_key(tmp / "key")

    def roofline(state: RunState) -> StepArgs:
        made = roofline_arguments(state)
        return dataclasses.replace(
            made, args=(*made.args, "--no-default-shapes", "--shapes", "256x256x256", "--no-fusion")
        )

    plan = tuple(
        dataclasses.replace(s, arguments=lambda state: SMALL_BANDWIDTH)
        if s.step == "bandwidth"
        else dataclasses.replace(s, arguments=roofline)
        if s.step == "roofline"
        else s
        for s in registry.lab_plan()
    )
    record = collect(
        RunOptions(output_dir=tmp, skip=tuple(s.step for s in plan if s.step not in RAN)),
        LocalRunner(),
        "test: this CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    path = tmp / "theirs.tar.gz"
    path.write_bytes(assemble(with_file(record, credentials), key))
    return path, public, credentials


def with_file(record, credentials: Path):
    """RECORD as its signer edited it: `--shapes-file CREDENTIALS` added to the roofline step's argv (in
    commands.json and in the document's own argv), then signed: every check of `dossier verify` holds."""
    extra = ("--shapes-file", str(credentials))
    steps = []
    for step in record.steps:
        if step.step == "roofline":
            document = {**step.document, "argv": [*step.document["argv"], *extra]}
            step = dataclasses.replace(
                step, run=dataclasses.replace(step.run, argv=(*step.run.argv, *extra)), document=document
            )
        steps.append(step)
    return dataclasses.replace(record, steps=tuple(steps))


@pytest.fixture(scope="module")
def reproduced(theirs_with_a_file, tmp_path_factory):
    """`dossier reproduce THEIRS` run here: (exit code, stderr, MINE, the statement, my key, THEIRS, their key)."""
    theirs, their_public, _ = theirs_with_a_file
    tmp = tmp_path_factory.mktemp("mine")
    key, public = make_key(tmp / "mine-key")
    out = tmp / "out"
    err_file = tmp / "stderr.txt"  # (a module fixture has no capsys)
    with open(err_file, "w") as err, contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        code = main(
            [
                "reproduce",
                str(theirs),
                "--key",
                str(their_public),
                "--output-dir",
                str(out),
                "--name",
                "mine",
                "--signing-key",
                str(key.path),
            ]
        )
    statement = out / "reproduction-theirs-vs-mine.intoto.json"
    return code, err_file.read_text(), out / "mine.tar.gz", statement, tmp / "mine-key", theirs, their_public


def test_their_file_option_is_said_first_and_never_reaches_the_bundle_sent_back(reproduced):
    code, err, mine, statement, _, _, _ = reproduced
    said = "reproduce: cannot honour: roofline: their --shapes-file is not taken (a file of their machine)"
    assert said in err, err
    assert err.index(said) < err.index("[1/")  # before any probe runs
    files = read_all(mine)
    leaked = [name for name, data in files.items() if b"wJalrXUtnFEMI" in data or b"credentials" in data]
    assert not leaked, leaked
    commands = json.loads(files["commands.json"])
    roofline = next(s for s in commands["steps"] if s["step"] == "roofline")
    assert roofline["status"] == "completed" and "--shapes-file" not in roofline["argv"]
    predicate = json.loads(__import__("base64").b64decode(json.loads(statement.read_bytes())["payload"]))["predicate"]
    assert set(predicate["not_honoured"]) == {"roofline"}
    figures = [f for f in predicate["figures"] if f["figure"].startswith("roofline.")]
    assert figures and all(f["verdict"] == "not_comparable" for f in figures)
    assert all("their plan was not honoured here: their --shapes-file is not taken" in f["why"] for f in figures)
    assert code in (0, 1)  # the other figures are this shared CPU's: the verdict is not what is tested
