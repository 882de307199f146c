"""The suite itself: it writes only in its temporary folders, and no skip hides an import error."""

import os
import pwd
import re
from pathlib import Path

from harness import recovery
from harness.signing.keys import configured_key_path

TESTS = Path(__file__).resolve().parents[1]


def test_the_recovery_folder_and_the_default_key_are_not_the_users():
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    home = Path(os.environ["HOME"]).resolve()
    assert home != real_home and real_home not in home.parents
    for path in (recovery.recovery_roots()[0], configured_key_path()):
        assert home in path.resolve().parents, path


def test_no_skip_guard_hides_an_import_error():
    """A module that no longer imports must fail its tests, never skip them."""
    guards = re.compile(r"importorskip|find_spec\([^)]*harness|except ImportError")
    found = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if guards.search(line)
    ]
    assert not found, found


def test_hypothesis_writes_nothing_into_the_work_tree():
    from hypothesis.configuration import storage_directory

    work_tree = TESTS.parent
    assert work_tree not in storage_directory("constants", intent_to_write=False).path.resolve().parents


def test_the_suite_removes_the_temporary_folders_it_makes(pytestconfig):
    """`make test` leaves no temporary folder of its own behind (a 262 MB pytest folder and a
    field-inventory-* one did, issue 38): pytest keeps a failing test's tmp_path only, of the last
    session only, and a folder a test makes itself (tempfile.mkdtemp) is one it removes again: each
    mkdtemp in the suite sits beside the rmtree or the TemporaryDirectory that removes it."""
    assert pytestconfig.getini("tmp_path_retention_policy") == "failed"
    assert int(pytestconfig.getini("tmp_path_retention_count")) <= 1
    makers = [
        path.relative_to(TESTS)
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name and "mkdtemp(" in path.read_text()
    ]
    for path in makers:
        text = (TESTS / path).read_text()
        assert "rmtree(" in text, f"{path} makes a temporary folder with mkdtemp and never removes it"
    assert makers == [Path("conftest.py")], makers  # the hypothesis folder, removed at pytest_unconfigure
