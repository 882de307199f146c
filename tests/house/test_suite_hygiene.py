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
