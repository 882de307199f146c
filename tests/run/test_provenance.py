"""The harness identifies itself by the content of its own files, and records a git commit only
when its files are tracked at that commit (its own checkout, or a larger repository it is part
of): never the commit of a repository it merely lies inside, untracked."""

import json
import shutil
import subprocess
import sys

from harness.run import provenance

ROOT = provenance.PROJECT_ROOT


def _copy_harness(destination):
    shutil.copytree(ROOT / "harness", destination / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "schemas", destination / "schemas")


def _tool_info_of(copy_root):
    code = "import json; from harness.run.provenance import tool_info; print(json.dumps(tool_info()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=copy_root,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy_root)},
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def _git(cwd, *args):
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            "PATH": "/usr/bin:/bin",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "HOME": str(cwd),
        },
    )


def test_a_copy_inside_another_repository_records_no_commit_but_the_same_content_hash(tmp_path):
    outer = tmp_path / "outer"
    (outer / "vendor" / "rig").mkdir(parents=True)
    _git(outer, "init", "-q")
    (outer / "README").write_text("another project\n")
    _git(outer, "add", "README")
    _git(outer, "commit", "-q", "-m", "outer")
    copy = outer / "vendor" / "rig"
    _copy_harness(copy)
    info = _tool_info_of(copy)
    assert set(info["git_commit"]) == {"unavailable"}
    assert "harness files are not tracked by the git repository holding them" in info["git_commit"]["unavailable"]
    assert set(info["git_dirty"]) == {"unavailable"}
    assert info["source_sha256"] == provenance.source_sha256(ROOT)


def test_a_copy_tracked_inside_a_larger_repository_records_that_commit_and_its_edits(tmp_path):
    outer = tmp_path / "monorepo"
    copy = outer / "tools" / "rig"
    copy.mkdir(parents=True)
    _git(outer, "init", "-q")
    _copy_harness(copy)
    _git(outer, "add", ".")
    _git(outer, "commit", "-q", "-m", "vendored")
    head = subprocess.run(["git", "-C", str(outer), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    info = _tool_info_of(copy)
    assert info["git_commit"] == head and info["git_dirty"] is False
    (outer / "README").write_text("an edit outside the harness\n")  # untracked and elsewhere: not the harness's
    assert _tool_info_of(copy)["git_dirty"] is False
    template = copy / "harness" / "present" / "templates" / "report.md.j2"
    template.write_text(template.read_text() + "\n")
    assert _tool_info_of(copy)["git_dirty"] is True


def test_the_content_hash_changes_with_any_source_file_and_not_with_its_location(tmp_path):
    first, second = tmp_path / "a", tmp_path / "bb" / "deeper"
    for root in (first, second):
        _copy_harness(root)
    assert provenance.source_sha256(first) == provenance.source_sha256(second) == provenance.source_sha256(ROOT)
    template = second / "harness" / "present" / "templates" / "report.md.j2"
    template.write_text(template.read_text() + "\n")
    assert provenance.source_sha256(second) != provenance.source_sha256(first)


def test_a_copy_outside_any_repository_says_why_there_is_no_commit(tmp_path):
    _copy_harness(tmp_path)
    info = _tool_info_of(tmp_path)
    assert set(info["git_commit"]) == {"unavailable"} and "not a git repository" in info["git_commit"]["unavailable"]
    assert len(info["source_sha256"]) == 64


def test_this_checkout_records_its_own_commit():
    info = provenance.tool_info()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert info["git_commit"] == head
