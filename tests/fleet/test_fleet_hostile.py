"""Issue 37, cases 3, 6 and 7 (the fleet's): a fleet run directory is written by its nodes, so another
party's files. A node log linked to the fleet's private key stays out of the fleet bundle; node and
partition names are validated where they enter (a job's node list, --partition, --node, scontrol's
answer); a FIFO or /dev/zero among the partials is refused at once; a garbage exit status, a Slurm client
printing non-UTF-8 or hanging is a clear error, never an internal one (exit 70); no worker thread prints a
traceback. The fleet is bench/fleet_synth.py's synthetic one (CONSTRUCTED nodes, real signed bundles)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from harness.fleet import slurm
from tests.cli_support import dossier
from tests.fleet_support import JOB, synthetic_fleet

ROOT = Path(__file__).resolve().parents[2]
NODES = 12


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out, _ = synthetic_fleet(tmp_path_factory.mktemp("hostile-fleet"), count=NODES)
    return out


@pytest.fixture
def fleet(made, tmp_path):
    """A copy of the synthetic fleet this test may change."""
    out = tmp_path / "fleet"
    shutil.copytree(made, out, symlinks=True)
    return out, out / "fleet-synthetic"


def collect(out: Path, *more: str) -> tuple[int, str, str]:
    return dossier("fleet", "collect", JOB, "--output-dir", str(out), "--key", str(out / "keys" / "dossier.pub"), *more)


def in_process(*argv: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m harness ARGV` in its own process: its exit code, and whether it ended (a hang is a failure)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_a_node_log_linked_to_the_fleet_key_stays_out_of_the_fleet_bundle(fleet):
    """Case 3."""
    out, run = fleet
    key = (out / "keys" / "dossier.key").read_bytes()
    for log in sorted((run / "logs").glob(f"slurm-{JOB}-*.out"))[:3]:
        log.unlink()
        log.symlink_to(out / "keys" / "dossier.key")
    code, printed, err = collect(out, "--workers", "1")
    assert code in (0, 1), err  # the planted sick nodes
    with tarfile.open(out / f"fleet-{JOB}.tar.gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert not [name for name, data in members.items() if key.strip() in data or b"PRIVATE KEY" in data]
    fleet_json = members["fleet.json"].decode()
    assert "PRIVATE KEY" not in fleet_json


@pytest.mark.parametrize(
    "name", ["a/../n0001", '=HYPERLINK("https://evil.example","x")', "n|0001", "n0001\n# x", "n[1-1000]"]
)
def test_a_node_list_naming_no_slurm_node_is_refused(fleet, name):
    """Case 6: a member name verify refuses, a CSV formula, a table's end: refused where they enter, exit 2."""
    out, run = fleet
    nodes = (run / "nodelist").read_text().split()
    (run / "nodelist").write_text("\n".join([name.replace("\n", " "), *nodes[1:]]) + "\n")
    code, _, err = collect(out)
    assert code == 2 and "is not one Slurm node name" in err and "Traceback" not in err


def test_a_node_list_that_is_not_a_regular_file_is_refused(fleet, tmp_path):
    """A link to a file larger than any node list (sparse: it takes no disk): refused unread, at once."""
    out, run = fleet
    large = tmp_path / "large"
    with open(large, "wb") as handle:
        handle.truncate(300 * 2**20)
    (run / "nodelist").unlink()
    (run / "nodelist").symlink_to(large)
    done = in_process("fleet", "collect", JOB, "--output-dir", str(out), "--key", str(out / "keys" / "dossier.pub"))
    assert done.returncode == 2 and "is a symbolic link" in done.stderr


def test_a_garbage_all_reduce_exit_status_is_a_failed_step_not_an_internal_error(fleet):
    """Case 7."""
    out, run = fleet
    (run / "allreduce").mkdir(exist_ok=True)
    (run / "allreduce" / "exit_code").write_bytes(b"\xff\xfegarbage\x00\n")
    code, _, err = collect(out, "--workers", "1")
    assert code in (0, 1) and "internal error" not in err, err


def test_a_node_bundle_that_is_a_fifo_is_a_failed_node_not_a_hang(fleet):
    out, run = fleet
    bundle = next((run / "nodes").glob("*/*.tar.gz"))
    bundle.unlink()
    os.mkfifo(bundle)
    done = in_process("fleet", "collect", JOB, "--output-dir", str(out), "--key", str(out / "keys" / "dossier.pub"))
    assert done.returncode in (0, 1) and "internal error" not in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["fifo", "link", "too large"])
def test_merge_refuses_a_partial_that_is_no_regular_file_at_once_and_prints_no_traceback(fleet, kind, tmp_path):
    """Case 6: `fleet merge` hung on a FIFO partial and read a link to /dev/zero without bound (a sparse file
    past the cap stands in for it here: /dev/zero read without bound would fill this machine's memory);
    and a thread of its own printed a traceback on every run."""
    out, _ = fleet
    shards = out / f"fleet-{JOB}.shards"
    shards.mkdir()
    partial = shards / "shard-0-of-1.intoto.json"
    large = tmp_path / "large" if kind == "link" else partial
    if kind == "fifo":
        os.mkfifo(partial)
    else:
        with open(large, "wb") as handle:
            handle.truncate(300 * 2**20)
        if kind == "link":
            partial.symlink_to(large)
    done = in_process(
        "fleet", "merge", JOB, "--output-dir", str(out), "--key", str(out / "keys" / "dossier.pub"), timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert {"fifo": "is a FIFO, not a regular file", "link": "is a symbolic link", "too large": "larger than"}[
        kind
    ] in done.stderr
    assert "Traceback" not in done.stderr and "Exception in thread" not in done.stderr, done.stderr


def test_submit_refuses_a_partition_that_is_not_one_name(tmp_path):
    """Case 6: `--partition $'debug\\ntouch X'` was a line of the batch script."""
    done = in_process("fleet", "submit", "--nodes", "2", "--partition", "debug\ntouch X", "--output-dir", str(tmp_path))
    assert done.returncode == 2 and "not a Slurm partition name" in done.stderr
    assert not list(tmp_path.rglob("fleet.sbatch"))


@pytest.mark.parametrize("node", ["n[1-1000]", "n1,n2", "n1 n2", "../n1"])
def test_check_drains_one_node_by_its_name_never_a_range(node, tmp_path):
    """Case 6: `check --drain --node 'n[1-1000]'` drained 1000 nodes (scontrol expands the range)."""
    done = in_process("check", "--drain", "--node", node, "--expect-gpus", "0")
    assert done.returncode == 2 and "is not one Slurm node name" in done.stderr


def fake_scontrol(folder: Path, body: str) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "scontrol"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}


def test_a_slurm_client_printing_non_utf8_is_read_not_an_internal_error(tmp_path):
    """Case 7."""
    env = fake_scontrol(tmp_path / "bin", r"printf 'NodeName=n1 \377\376\nState=IDLE+DRAIN\nReason=\377 x\n'")
    done = in_process("check", "--drain", "--node", "n1", "--expect-gpus", "0", env=env)
    assert done.returncode in (0, 1, 4, 5) and "internal error" not in done.stderr, done.stderr


def test_a_slurm_client_that_hangs_is_an_environment_problem_not_an_internal_error(tmp_path, monkeypatch):
    """Case 7: scontrol hanging past its limit (60 s; 1 s here)."""
    for name, value in fake_scontrol(tmp_path / "bin", "sleep 30").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(slurm, "SCONTROL_TIMEOUT_S", 1.0)
    code, _, err = dossier("check", "--drain", "--node", "n1", "--expect-gpus", "0")
    assert code == 4 and "did not answer within 1 s" in err and "internal error" not in err, err
