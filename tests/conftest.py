"""Suite-wide test settings."""

import shutil
import tempfile

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps no example database, and its other files (a cache of the source's constants)
# go to a temporary folder of the session: never .hypothesis/ in the work tree.
settings.register_profile("dossier", database=None)
settings.load_profile("dossier")
HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="dossier-tests-hypothesis-")
set_hypothesis_home_dir(HYPOTHESIS_HOME)


def pytest_unconfigure(config):
    shutil.rmtree(HYPOTHESIS_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _probes_run_locally_unless_a_test_asks(monkeypatch):
    """`--runner` defaults to auto, which takes docker whenever an engine and the pinned image
    are present (as they are once tests/runners/test_docker.py has built it): the suite must not change
    runner with the machine's state. Tests of the docker runner pass `--runner docker` explicitly."""
    monkeypatch.setenv("DOSSIER_RUNNER", "local")


@pytest.fixture(scope="session")
def _home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.fixture(autouse=True)
def _home_is_a_temporary_folder(monkeypatch, _home):
    """No test writes outside its temporary folders: HOME and the XDG folders point into one for the
    session, so the checkpoint cache, the recovery folders (~/.cache/rig-dossier/recovery) and a
    signing key made on first use (~/.config/rig-dossier) are never the real ones; a test that
    wants a cache or key of its own still sets DOSSIER_CACHE_DIR or DOSSIER_KEY itself."""
    monkeypatch.setenv("HOME", str(_home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(_home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_home / ".config"))
    for name in ("DOSSIER_CACHE_DIR", "DOSSIER_KEY"):
        monkeypatch.delenv(name, raising=False)
