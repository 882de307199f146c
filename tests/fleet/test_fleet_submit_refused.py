"""`dossier fleet submit` writes nothing a refusal leaves behind (issue 38): without a Slurm client it
is refused before anything is written, and when sbatch refuses the job (here a stand-in `sbatch` that
says what a login node without a controller says, with the exit code it gives) the run directory and
the fleet key pair made for it are removed again; a key pair that was already there stays."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.signing.keys import generate

REFUSING_SBATCH = """#!/bin/sh
echo "sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host" >&2
echo "sbatch: fatal: Could not establish a configuration source" >&2
exit 1
"""


@pytest.fixture
def refusing_sbatch(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(REFUSING_SBATCH)
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return sbatch


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_without_a_slurm_client_nothing_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "fleet"
    assert main(["fleet", "submit", "--nodes", "2", "--output-dir", str(out)]) == 4
    assert "sbatch is not on PATH" in capsys.readouterr().err
    assert not out.exists()


def test_a_job_sbatch_refuses_leaves_no_run_directory_and_no_key_pair(refusing_sbatch, tmp_path, capsys):
    out = tmp_path / "fleet"
    assert main(["fleet", "submit", "--nodes", "2", "--output-dir", str(out)]) == 4
    err = capsys.readouterr().err
    assert "sbatch refused the fleet job" in err and "Could not establish a configuration source" in err
    assert "made the fleet signing key" not in err  # no note about a key that is gone again
    assert not out.exists()  # made by this submission, so removed with it


def test_a_refused_job_keeps_what_was_there_before(refusing_sbatch, tmp_path, capsys):
    out = tmp_path / "fleet"
    private, public = generate(out / "keys")
    (out / "notes.txt").write_text("the admin's own file\n")
    before = _tree(out)
    assert main(["fleet", "submit", "--nodes", "2", "--output-dir", str(out)]) == 4
    assert _tree(out) == before and private.exists() and public.exists()
