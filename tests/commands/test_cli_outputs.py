"""Outputs checked before the work (harness/paths.py), and nothing measured lost when a write fails."""

import errno
import json
import os
from pathlib import Path

import pytest

from harness import cli, paths
from harness.bundle.read import read_all
from harness.commands import probe as _probe
from harness.commands import run
from harness.errors import EnvironmentProblem, UsageError
from harness.run import destination as dossier  # where the bundle is assembled and written
from harness.run.outcome import judge
from harness.runners.local import LocalRunner
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import make_key, tick_modules  # noqa: F401 - a pytest fixture, requested by name

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests/fixtures/h200/dossier-h200.tar.gz"
PUBLIC = ROOT / "tests/fixtures/h200/dossier-h200.pub"
AS_ROOT = os.geteuid() == 0


# --- the one check --------------------------------------------------------------------------


def test_a_missing_folder_on_the_way_is_fine_and_not_made_by_the_check(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    assert paths.output_file(target, "--output") == target
    assert paths.output_dir(tmp_path / "x" / "y", "--output-dir") == tmp_path / "x" / "y"
    assert list(tmp_path.iterdir()) == []


def test_a_folder_or_a_file_on_the_way_is_refused_even_for_root(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    with pytest.raises(UsageError, match=r"^--junit .*/dir: is a folder; give a file name$"):
        paths.output_file(tmp_path / "dir", "--junit")
    with pytest.raises(UsageError, match=r"--junit .*/file/deeper/x.xml: .*/file is not a folder$"):
        paths.output_file(tmp_path / "file" / "deeper" / "x.xml", "--junit")
    with pytest.raises(UsageError, match=r"--output-dir .*/file: is not a folder$"):
        paths.output_dir(tmp_path / "file", "--output-dir")


def test_an_output_that_is_an_input_is_refused(tmp_path):
    source = tmp_path / "in.tar.gz"
    source.write_bytes(b"x")
    with pytest.raises(UsageError, match="is the input .* it would be overwritten"):
        paths.output_file(tmp_path / "." / "in.tar.gz", "-o", inputs=[source])


@pytest.mark.skipif(AS_ROOT, reason="root writes through mode bits; the folder/file cases above hold for root")
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--output-dir", "{ro}"],
        ["run", "--output-dir", "{ro}/new/deeper"],
        ["report", str(BUNDLE), "-o", "{ro}/report.md"],
        ["accept", str(BUNDLE), "--profile", "h200-sxm-141gb", "--key", str(PUBLIC), "--junit", "{ro}/a.xml"],
        ["keygen", "--out", "{ro}/keys"],
        ["health", "-o", "{ro}/health.json"],
        ["health-diff", "{idle}", "{idle}", "-o", "{ro}/d.json"],
    ],
)
def test_a_read_only_folder_is_refused_before_the_work(tmp_path, monkeypatch, capsys, argv):
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    (tmp_path / "idle.json").write_text("{}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(LocalRunner, "run", lambda *a, **k: pytest.fail("a probe started"))
    key, _ = make_key(tmp_path / "k")
    extra = ["--signing-key", str(key.path)] if argv[0] == "run" else []
    try:
        code = cli.main([a.format(ro=read_only, idle=tmp_path / "idle.json") for a in argv] + extra)
    finally:
        read_only.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 2 and "not writable" in err and len(err.strip().splitlines()) == 1, err
    assert list(read_only.iterdir()) == []


# --- nothing measured is lost ---------------------------------------------------------------


@pytest.fixture
def test_plan_run(monkeypatch, tmp_path, tick_modules):  # noqa: F811 - the fixture imported above
    """`dossier run` of the test-only plan (one real tick probe), recovery folders under tmp_path."""
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(run, "lab_plan", lambda: test_plan.PLAN[:1])
    monkeypatch.setattr(
        _probe, "select_from_args", lambda args: (LocalRunner(package=test_plan.PACKAGE), "tests: the test-only probes")
    )
    key, public = make_key(tmp_path / "k")
    return ["run", "--output-dir", str(tmp_path / "out"), "--name", "lost", "--signing-key", str(key.path)], public


def recovered(tmp_path) -> Path:
    folders = list((tmp_path / "cache" / "recovery").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("lost-")
    return folders[0]


def test_a_bundle_that_cannot_be_written_at_the_end_is_kept_with_every_raw_result(
    test_plan_run, tmp_path, monkeypatch, capsys
):
    argv, public = test_plan_run

    def disk_full(data, destination):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(destination))

    monkeypatch.setattr(dossier, "write_atomically", disk_full)
    assert cli.main(argv) == 4
    err = capsys.readouterr().err
    folder = recovered(tmp_path)
    assert f"could not write {tmp_path / 'out' / 'lost.tar.gz'}: No space left on device" in err
    assert f"everything measured is kept in {folder}" in err and "Traceback" not in err
    raw = json.loads((folder / "raw" / "tick.json").read_bytes())
    assert raw["probe"] == "tick" and len(raw["samples_mib_per_s"]) == 5
    assert b"##progress" in (folder / "logs" / "tick.stderr.txt").read_bytes()
    assert verify_bundle(folder / "lost.tar.gz", load_public(public)).ok  # the signed bundle itself
    assert read_all(folder / "lost.tar.gz")["raw/tick.json"] == (folder / "raw" / "tick.json").read_bytes()
    assert "No space left on device" in (folder / "README.txt").read_text()
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_a_bug_while_assembling_keeps_the_raw_results_and_is_one_line(test_plan_run, tmp_path, monkeypatch, capsys):
    argv, _ = test_plan_run
    monkeypatch.setattr(dossier, "assemble", lambda *a: {}["a bug"])
    assert cli.main(argv) == 70
    err = capsys.readouterr().err
    folder = recovered(tmp_path)
    assert f"everything measured is kept in {folder}" in err and "Traceback" not in err
    assert json.loads((folder / "raw" / "tick.json").read_bytes())["probe"] == "tick"
    assert not (folder / "lost.tar.gz").exists()


def test_a_probe_command_whose_output_cannot_be_written_keeps_the_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(
        _probe, "select_from_args", lambda args: (LocalRunner(package=test_plan.PACKAGE), "tests: the test-only probes")
    )

    def read_only_now(path, data, option):  # the folder became read-only while the probe ran
        raise EnvironmentProblem(f"cannot write {option} {path}: Read-only file system")

    monkeypatch.setattr(paths, "write_output", read_only_now)
    monkeypatch.setattr(_probe, "judge", lambda run: judge(run, schema="common"))  # tick has no own schema
    args = cli.parse(["health", "-o", str(tmp_path / "tick.json")])
    with pytest.raises(EnvironmentProblem) as raised:
        _probe.run_probe("tick", [], args)
    folders = list((tmp_path / "cache" / "recovery").iterdir())
    assert raised.value.exit_code == 4 and f"is kept in {folders[0]}" in str(raised.value)
    assert json.loads((folders[0] / "tick.json").read_text())["probe"] == "tick"
