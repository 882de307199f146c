"""A full CPU dossier of this machine with the lab plan (whatever probes this build has), end to end.

Steps whose probe or analysis is not in this build are listed as not run; as probes land they
run here for real. One run is shared by the tests of this module.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis.verdict import Verdict
from harness.bundle.read import read_all
from harness.bundle.write import write_atomically
from harness.cli import main
from harness.present.folding import LINE_LIMIT
from harness.registry import lab_criteria
from harness.run.assemble import assemble
from harness.run.orchestrate import RunOptions, collect
from harness.run.plan import LAB_PLAN, step_ids
from harness.runners.select import select_runner
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import make_key, quiet_display, rewrite


@pytest.fixture(scope="module")
def dossier(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    key, public = make_key(tmp / "keys")
    runner, why = select_runner("local")  # the containerized dossier is tests/runners/test_docker.py's
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
    flat = " ".join(report.split())  # long lines are wrapped: compare the words
    for criterion in lab_criteria():  # each headed by its label and verdict, what it asks below
        title = " ".join(criterion.title.split())
        assert any(f"### {criterion.label}: {verdict.shown}" in report for verdict in Verdict), criterion.label
        assert f"Asked (`{criterion.name}`): {title}" in flat, title
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
    assert (
        main(["run", "--output-dir", str(tmp_path), "--name", "cli", "--signing-key", str(dossier["key"].path), *skip])
        == 5
    )  # nothing judged at all: INCOMPLETE (every criterion left out with --skip: SKIP)
    out, err = capsys.readouterr()
    printed = out.strip()
    answer = "verdict: INCOMPLETE: cli.tar.gz: 9 skipped (exit 5)"  # first and last of the closing block
    assert err.splitlines()[-1] == answer and err.count(answer) == 2
    assert "SKIP Health and toolchain: the health step was left out" in err
    assert printed == str(tmp_path / "cli.tar.gz")
    assert verify_bundle(tmp_path / "cli.tar.gz", load_public(dossier["public"])).ok
    commands = json.loads(read_all(tmp_path / "cli.tar.gz")["commands.json"])
    assert {s["why"] for s in commands["steps"]} == {f"skipped with --skip {s}" for s in step_ids()}
    assert (
        main(["run", "--output-dir", str(tmp_path), "--name", "cli", "--signing-key", str(dossier["key"].path), *skip])
        == 2
    )  # never overwrites


def test_diff_against_itself_and_another_run(dossier, tmp_path, capsys):
    # the same file twice is refused, as `dossier reproduce` refuses it (exit 2); a copy of it is another file
    assert main(["diff", str(dossier["path"]), str(dossier["path"])]) == 2
    assert "A and B are the same file" in capsys.readouterr().err
    copy = tmp_path / "copy.tar.gz"
    copy.write_bytes(dossier["path"].read_bytes())
    assert main(["diff", str(dossier["path"]), str(copy), "--key", str(dossier["public"]), "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert all(f["same"] for f in comparison["fields"])
    assert all(m["ratio"] in (1.0, None) for m in comparison["metrics"])


def test_no_private_key_and_no_secret_environment_in_the_bundle(dossier, monkeypatch):
    files = read_all(dossier["path"])
    assert not any(b"PRIVATE KEY" in data for data in files.values())
    environment = json.loads(files["environment.json"])["host"]["environment"]
    assert not any("TOKEN" in name or "SECRET" in name or name == "DOSSIER_KEY" for name in environment)


def test_the_report_is_small_and_short_lined(dossier):
    report = read_all(dossier["path"])["report.md"].decode()
    # every GEMM the roofline leaves unexplained is named with its figures (how many depends on this shared
    # CPU's timings: 3 to 7 seen here, ~200 bytes each with the causes ruled out for it); the rest is bounded
    named = report.count("  - unexplained: ")
    # the host contention section: a line for the idle steps, one of ~200 bytes per busy step (on this
    # shared VM, often every step), bounded apart
    start = report.index("## Host contention")
    host = report[start : report.index("\n## ", start + 1)]
    assert len(host.encode()) < 600 + 250 * host.count("\n- ")
    assert len(report.encode()) - len(host.encode()) < 20_000 + 300 * named
    assert [line for line in report.splitlines() if len(line) > LINE_LIMIT and not line.startswith("|")] == []


OFFLINE = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",  # any fetch would fail
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "",
}


def check_jsonschema(folder: Path, schema: str, document: str) -> subprocess.CompletedProcess:
    """The standard tool's CLI, as docs/bundle.md documents it: only --schemafile, offline."""
    tool = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run(
        [str(tool), "--schemafile", schema, document],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **OFFLINE},
    )


@pytest.fixture(scope="module")
def extracted(dossier):
    folder = dossier["tmp"] / "extracted"
    for name, data in read_all(dossier["path"]).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_check_jsonschema_validates_every_document_offline_with_the_bundled_schemas(extracted):
    commands = json.loads((extracted / "commands.json").read_text())
    pairs = [("commands", "commands.json"), ("environment", "environment.json")]
    pairs += [("host-contention", "host-contention.json")]
    pairs += [(s["schema"], s["output"]) for s in commands["steps"] if s["output"]]
    assert any(output.startswith("raw/") for _, output in pairs) and any(o.startswith("derived/") for _, o in pairs)
    for schema, document in pairs:
        done = check_jsonschema(extracted, f"schemas/{schema}.schema.json", document)
        assert done.returncode == 0 and "ok -- validation done" in done.stdout, (document, done.stdout, done.stderr)


def test_check_jsonschema_refuses_a_broken_document(extracted, tmp_path):
    broken = json.loads((extracted / "raw" / "bandwidth.json").read_text())
    del broken["contract_version"]  # required by the common schema the bandwidth schema refers to
    (extracted / "broken.json").write_text(json.dumps(broken))
    done = check_jsonschema(extracted, "schemas/bandwidth.schema.json", "broken.json")
    assert done.returncode == 1 and "'contract_version' is a required property" in done.stdout


def _failures(dossier, edit) -> list:
    out = rewrite(dossier["path"], dossier["tmp"] / "edited.tar.gz", edit, resign_with=dossier["key"])
    return [(f.check, f.subject, f.detail) for f in verify_bundle(out, load_public(dossier["public"])).failures]


def test_a_bundled_schema_that_differs_from_this_builds_is_named(dossier):
    def loosen(files):
        files["schemas/common.schema.json"] = files["schemas/common.schema.json"].replace(
            b'"minLength": 1', b'"minLength": 0'
        )

    found = _failures(dossier, loosen)
    assert [(check, subject) for check, subject, _ in found] == [("schema-file", "schemas/common.schema.json")]
    assert "differs from this build's schemas/common.schema.json: the bundle was made by rig-dossier" in found[0][2]


def test_a_schema_the_documents_use_must_be_carried(dossier):
    def drop(files):
        del files["schemas/health.schema.json"]
        commands = json.loads(files["commands.json"])
        commands["schemas"].remove("schemas/health.schema.json")
        files["commands.json"] = (json.dumps(commands, allow_nan=False, sort_keys=True, indent=1) + "\n").encode()

    found = _failures(dossier, drop)
    assert ("files", "schemas/health.schema.json") in [(check, subject) for check, subject, _ in found]


def test_a_table_member_is_rendered_again_and_compared(dossier):
    files = read_all(dossier["path"])
    tables = [name for name in files if name.startswith("tables/")]
    # the CPU dossier measures the packaged checkpoint's tensors, the roofline's shapes, copies, a short stress
    assert sorted(tables) == ["tables/precision.md", "tables/roofline.md", "tables/stress.md", "tables/transfer.md"]
    # the stress table is rendered from the bundle's documents: the roofline's burst set beside the sustained rate
    assert b"burst" in files["tables/stress.md"] and b"roofline" in files["tables/stress.md"]

    def edit(files):
        files["tables/precision.md"] = files["tables/precision.md"].replace(b"SQNR", b"SNR", 1)

    assert [(c, s) for c, s, _ in _failures(dossier, edit)] == [("report", "tables/precision.md")]
