"""A full CPU dossier of this machine with the lab plan (whatever probes this build has), end to end.

Steps whose probe or analysis is not in this build are listed as not run; as probes land they
run here for real. One run is shared by the tests of this module.
"""

import json

import pytest

from harness.bundle.assemble import assemble
from harness.bundle.read import read_all
from harness.bundle.verify import verify_bundle
from harness.bundle.write import write_atomically
from harness.cli import main
from harness.registry import lab_criteria
from harness.run.orchestrate import RunOptions, collect
from harness.run.plan import LAB_PLAN, step_ids
from harness.runners.select import select_runner
from harness.signing.keys import load_public
from tests.bundle_support import make_key, quiet_display, rewrite


@pytest.fixture(scope="module")
def dossier(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    key, public = make_key(tmp / "keys")
    runner, why = select_runner("local")  # the containerized dossier is tests/test_docker.py's
    record = collect(RunOptions(output_dir=tmp / "out"), runner, why, LAB_PLAN, display=quiet_display(len(LAB_PLAN)))
    data = assemble(record, key)
    path = write_atomically(data, tmp / "out" / "cpu.tar.gz")
    return {"tmp": tmp, "key": key, "public": public, "record": record, "data": data, "path": path}


def test_full_cpu_dossier_verifies(dossier, capsys):
    assert main(["verify", str(dossier["path"]), "--key", str(dossier["public"])]) == 0, capsys.readouterr()


def test_the_same_inputs_give_a_byte_identical_bundle(dossier):
    assert assemble(dossier["record"], dossier["key"]) == dossier["data"]


def test_every_lab_step_is_listed_with_an_outcome_and_reason(dossier):
    commands = json.loads(read_all(dossier["path"])["commands.json"])
    assert [s["step"] for s in commands["steps"]] == step_ids()
    for step in commands["steps"]:
        assert step["status"] in ("completed", "failed", "not_run")
        if step["status"] != "completed":
            assert step["why"], step["step"]
        else:
            assert step["output"] and (step["argv"] if step["kind"] == "probe" else step["function"])


def test_report_has_every_criterion_with_a_status(dossier):
    report = read_all(dossier["path"])["report.md"].decode()
    for criterion in lab_criteria():
        line = next(line for line in report.splitlines() if criterion.title in line)
        assert any(f"**{status}**" in line for status in ("pass", "fail", "not-measured"))
    assert "## How to reproduce" in report and "dossier run --runner " in report


def test_a_flipped_byte_in_a_real_member_is_named(dossier):
    names = [n for n in read_all(dossier["path"]) if n.startswith(("raw/", "commands", "environment"))]
    for name in names:
        def flip(files, name=name):
            files[name] = bytes([files[name][0] ^ 0x20]) + files[name][1:]
        out = rewrite(dossier["path"], dossier["tmp"] / "flip.tar.gz", flip)
        found = verify_bundle(out, load_public(dossier["public"])).failures
        assert any(f.subject == name for f in found), name


def test_report_command_re_renders_the_stored_report(dossier, capsys):
    assert main(["report", str(dossier["path"])]) == 0
    assert capsys.readouterr().out.encode() == read_all(dossier["path"])["report.md"]


def test_cli_run_writes_a_verifiable_bundle_and_prints_its_path(dossier, tmp_path, capsys):
    skip = [arg for step in step_ids() for arg in ("--skip", step)]
    assert main(["run", "--output-dir", str(tmp_path), "--name", "cli", "--key", str(dossier["key"].path),
                 *skip]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(tmp_path / "cli.tar.gz")
    assert verify_bundle(tmp_path / "cli.tar.gz", load_public(dossier["public"])).ok
    commands = json.loads(read_all(tmp_path / "cli.tar.gz")["commands.json"])
    assert {s["why"] for s in commands["steps"]} == {f"skipped with --skip {s}" for s in step_ids()}
    assert main(["run", "--output-dir", str(tmp_path), "--name", "cli", "--key", str(dossier["key"].path),
                 *skip]) == 2  # never overwrites


def test_diff_against_itself_and_another_run(dossier, tmp_path, capsys):
    assert main(["diff", str(dossier["path"]), str(dossier["path"]), "--key", str(dossier["public"]),
                 "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert all(f["same"] for f in comparison["fields"])
    assert all(m["ratio"] in (1.0, None) for m in comparison["metrics"])


def test_no_private_key_and_no_secret_environment_in_the_bundle(dossier, monkeypatch):
    files = read_all(dossier["path"])
    assert not any(b"PRIVATE KEY" in data for data in files.values())
    environment = json.loads(files["environment.json"])["host"]["environment"]
    assert not any("TOKEN" in name or "SECRET" in name or name == "DOSSIER_KEY" for name in environment)
