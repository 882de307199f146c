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


# --- case 2: a statement cannot vouch for itself ------------------------------------------------------


@pytest.fixture(scope="module")
def contended_statement(tmp_path_factory):
    """The contended pair (tests/reproduce_pairs.py: some figures do not reproduce), judged and signed here:
    (statement, its predicate, THEIRS, MINE, the signing key's folder)."""
    from tests import reproduce_pairs

    tmp = tmp_path_factory.mktemp("contended-statement")
    theirs, their_pub, mine, my_pub = reproduce_pairs.contended_pair(tmp)
    out = tmp / "out"
    with open(tmp / "out.txt", "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(
            [
                "reproduce",
                str(theirs),
                "--key",
                str(their_pub),
                "--against",
                str(mine),
                "--key-mine",
                str(my_pub),
                "--output-dir",
                str(out),
                "--signing-key",
                str(tmp / "mine-key" / "dossier.key"),
            ]
        )
    assert code == 1
    statement = out / "reproduction-theirs-vs-mine.intoto.json"
    return statement, payload(statement), theirs, mine, tmp / "mine-key"


def payload(path: Path) -> dict:
    import base64

    return json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))


def signed_again(stmt: dict, keys: Path, out: Path) -> Path:
    from harness.signing.keys import load_private
    from harness.signing.statement import sign_statement

    out.write_bytes(sign_statement(stmt, load_private(keys / "dossier.key")))
    return out


def verify_reproduction(capsys, path: Path, theirs: Path, mine: Path, keys: Path) -> tuple[int, str, str]:
    code = main(["verify-reproduction", str(path), str(theirs), str(mine), "--key", str(keys / "dossier.pub")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_honest_statement_verifies(contended_statement, capsys):
    path, _, theirs, mine, keys = contended_statement
    code, out, err = verify_reproduction(capsys, path, theirs, mine, keys)
    assert code == 0, err
    assert "verdict not_reproduced (fail): " in out and "comparable deciding figures did not reproduce" in out


def test_failing_steps_marked_not_honoured_do_not_make_it_reproduced(contended_statement, tmp_path, capsys):
    """The signer marks every step with a failing figure "not honoured", its figures not comparable, and
    the whole "reproduced": consistent with itself, signed by the right key; the bundles say otherwise."""
    path, stmt, theirs, mine, keys = contended_statement
    forged = json.loads(json.dumps(stmt))
    predicate = forged["predicate"]
    failing = {f["probe"] for f in predicate["figures"] if f["verdict"] == "not_reproduced"}
    predicate["not_honoured"] = dict.fromkeys(failing, "their image could not run here")
    for f in predicate["figures"]:
        if f["probe"] in failing:
            f.update(verdict="not_comparable", result="skip", why="their plan was not honoured here: their image")
    counts = {k: sum(f["verdict"] == k for f in predicate["figures"]) for k in predicate["counts"]}
    predicate.update(verdict="reproduced", result="pass", counts=counts, why="all comparable figures reproduced")
    code, out, err = verify_reproduction(capsys, signed_again(forged, keys, tmp_path / "f.json"), theirs, mine, keys)
    assert code == 1 and "verdict reproduced" not in out
    assert "it is not the judgement this build makes from the two bundles" in err and "Traceback" not in err


def test_another_build_claimed_does_not_turn_a_changed_verdict_into_a_note(contended_statement, tmp_path, capsys):
    """The tool hash edited to claim another build, and a failing figure's tolerance widened so that it
    reproduces (consistent with itself): a failure, never a note."""
    path, stmt, theirs, mine, keys = contended_statement
    forged = json.loads(json.dumps(stmt))
    predicate = forged["predicate"]
    predicate["tool"]["source_sha256"] = "0" * 64
    figure = next(f for f in predicate["figures"] if f["figure"] == "bandwidth.plateau_gbps")
    figure.update(tolerance=0.9, verdict="reproduced", result="pass", why="within its tolerance")
    predicate["counts"]["reproduced"] += 1
    predicate["counts"]["not_reproduced"] -= 1
    code, out, err = verify_reproduction(capsys, signed_again(forged, keys, tmp_path / "f.json"), theirs, mine, keys)
    assert code == 1 and "note:" not in err
    assert "bandwidth.plateau_gbps: tolerance 0.9 recorded" in err


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p["counts"].update(not_reproduced=0),
        lambda p: p.update(why="all 150 comparable figures reproduced \x1b[2J"),
        lambda p: p["figures"][0].update(why="looks fine to me"),
        lambda p: p["noise_model"].update(catalogue_sha256="f" * 64),
        lambda p: p["mine"].update(format_version=1),
        lambda p: p["mine"].update(signer_keyid="e" * 64),
    ],
    ids=["counts", "why", "a figure's why", "the noise model", "a bundle's format", "a bundle's signer"],
)
def test_every_part_of_the_judgement_is_checked(contended_statement, tmp_path, capsys, edit):
    path, stmt, theirs, mine, keys = contended_statement
    forged = json.loads(json.dumps(stmt))
    edit(forged["predicate"])
    code, out, err = verify_reproduction(capsys, signed_again(forged, keys, tmp_path / "f.json"), theirs, mine, keys)
    assert code == 1 and "\x1b" not in err + out, err


@pytest.mark.parametrize(
    "predicate",
    [
        {"figures": [1, "x", None]},
        {"figures": [], "identity": "comparable", "verdict": "not_comparable", "result": "skip"},
        {
            "figures": [
                {
                    "figure": "x",
                    "verdict": "reproduced",
                    "result": "pass",
                    "kind": "steady",
                    "theirs": 10**400 // 10**90,
                    "mine": 1,
                    "tolerance": 0.1,
                }
            ]
        },
        {
            "figures": [{"figure": ["x"], "verdict": "not_comparable", "why": "w"}],
            "identity": {"comparable": False},
            "verdict": "not_comparable",
            "result": "skip",
        },
        [],
    ],
    ids=["figures not objects", "identity a string", "a ratio past a float", "a figure id not a string", "a list"],
)
def test_a_malformed_signed_statement_is_refused_in_one_line(contended_statement, tmp_path, capsys, predicate):
    """Case 7: signed by the right key, about the right bundles, but no statement this build writes: exit 1."""
    path, stmt, theirs, mine, keys = contended_statement
    forged = {**stmt, "predicate": predicate}
    code, out, err = verify_reproduction(capsys, signed_again(forged, keys, tmp_path / "f.json"), theirs, mine, keys)
    assert code == 1 and "NOT VERIFIED" in err and "internal error" not in err, err
