"""Suite-wide test settings."""

import pytest


@pytest.fixture(autouse=True)
def _probes_run_locally_unless_a_test_asks(monkeypatch):
    """`--runner` defaults to auto, which takes docker whenever an engine and the pinned image
    are present (as they are once tests/test_docker.py has built it): the suite must not change
    runner with the machine's state. Tests of the docker runner pass `--runner docker` explicitly."""
    monkeypatch.setenv("DOSSIER_RUNNER", "local")
