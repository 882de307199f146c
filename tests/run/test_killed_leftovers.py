"""Issue 37, case 8: what a SIGKILL (no `finally` runs) or a full disk leaves behind.

- `dossier run` killed while a probe runs: its plot worker ends with it (harness.probes.lifetime), so
  multiprocessing's resource tracker ends too and unlinks the worker's semaphores in /dev/shm;
- the stress probe killed: its workers end with it, and the folder it left in the temporary folder is
  removed by the next one (harness.probes.scratch);
- a recovery folder written on a full disk (RLIMIT_FSIZE stands in for it): no 0-byte or half bundle is
  left, the folder that could not be written whole is removed.
Every process is started with its own TMPDIR and marked by an environment variable, as
tests/commands/test_interrupts.py does, so a survivor is found whatever else runs on the machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 180  # generous: torch's import on a loaded 2-core runner (a bound, never a measured time)
SHM = Path("/dev/shm")


def marked(token: str) -> dict[int, str]:
    """pid -> command line of the live processes whose environment carries TOKEN."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "environ").read_bytes():
                    found[int(entry.name)] = (
                        (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    )
            except OSError:
                continue
    return found


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT_S} s for {what}")
        time.sleep(0.1)


def environment(tmp_path: Path) -> tuple[dict[str, str], str, Path]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    token = uuid.uuid4().hex
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT), "RIG_DOSSIER_KILL_TEST": token}
    env["DOSSIER_CACHE_DIR"] = str(tmp_path / "cache")
    return env, token, scratch


def mapped_semaphores() -> set[str]:
    """The /dev/shm semaphores some live process maps (one in use)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found |= {
                    line.rsplit("/", 1)[-1]
                    for line in (entry / "maps").read_text().splitlines()
                    if "/dev/shm/sem." in line
                }
            except OSError:
                continue
    return found


def semaphores() -> set[str]:
    return {p.name for p in SHM.glob("sem.*")} if SHM.is_dir() else set()


def test_a_killed_dossier_run_leaves_no_plot_worker_no_tracker_and_no_semaphore(tmp_path):
    env, token, _ = environment(tmp_path)
    before = semaphores()
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--runner",
            "local",
            "--output-dir",
            str(tmp_path / "out"),
            *[
                word
                for step in ("precision", "allreduce", "transfer", "stress", "health-load", "health-diff")
                for word in ("--skip", step)
            ],
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = lambda: [p for p, line in marked(token).items() if "spawn_main" in line]  # noqa: E731 - the plot worker
    try:
        wait_for(lambda: worker() or run.poll() is not None, "the plot worker to start (after the bandwidth step)")
        assert run.poll() is None, "the run ended before it could be killed"
        helpers = {p: line for p, line in marked(token).items() if "multiprocessing" in line}
        assert any("resource_tracker" in line for line in helpers.values()), helpers
        new = semaphores() - before
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=WAIT_S)
        wait_for(lambda: not set(helpers) & set(marked(token)), "the plot worker and the resource tracker to end")
        left = (new & semaphores()) - mapped_semaphores()
        assert not left, f"semaphores left in /dev/shm: {sorted(left)}"
    finally:
        for pid in marked(token):  # the probe that was running when the run was killed ends on its own; not waited for
            os.kill(pid, signal.SIGKILL)


def test_a_killed_stress_probe_leaves_no_worker_and_its_folder_goes_at_the_next_start(tmp_path):
    env, token, scratch = environment(tmp_path)
    probe = subprocess.Popen(
        [sys.executable, "-m", "harness.probes.stress", "--seconds", "60", "--device", "cpu"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: len(marked(token)) >= 2 or probe.poll() is not None, "the stress worker to start")
        assert probe.poll() is None
        left = list(scratch.glob("stress-*"))
        assert left
        probe.send_signal(signal.SIGKILL)
        probe.wait(timeout=WAIT_S)
        wait_for(lambda: not marked(token), "the stress workers to end with the probe")
        assert all(p.exists() for p in left)  # a SIGKILL runs no `finally`: the folder stays, for now
    finally:
        for pid in marked(token):
            os.kill(pid, signal.SIGKILL)
    done = subprocess.run(
        [sys.executable, "-m", "harness.probes.stress", "--seconds", "0.5", "--device", "cpu", "--no-memory-test"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert list(scratch.glob("stress-*")) == []


RECOVERY = """
import resource, signal, sys
from harness import recovery
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
try:
    recovery.keep("dossier-x", {"dossier-x.tar.gz": b"x" * 1_000_000}, "the output folder is full")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_full_disk_leaves_no_empty_or_half_bundle_in_a_recovery_folder(tmp_path):
    env, _, scratch = environment(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", RECOVERY], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert "EnvironmentProblem" in done.stdout, done.stdout + done.stderr
    files = [p for root in (tmp_path / "cache", scratch) for p in root.rglob("*") if p.is_file()]
    assert files == [], [(str(p), p.stat().st_size) for p in files]
