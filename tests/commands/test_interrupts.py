"""Ctrl-C during any probe stops it cleanly: the runner asks the probe to stop (SIGTERM), the probe
ends its workers and removes its temporary folders, and nothing of it is left: no process, no file.

Each probe kind runs on the CPU through the local runner in a host process (tests/interrupt_driver.py)
with its own TMPDIR; once the probe has printed its first progress line (it is working: the stress
probe's worker is loading, the all-reduce's ranks are exchanging), the host gets SIGINT, as from a
terminal. Every process started is marked by an environment variable, so any survivor is found.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120  # generous: torch's import on a loaded 2-core runner (a bound, never a measured time)


def _checkpoint(folder: Path) -> list[str]:
    """A safetensors file large enough that the precision probe is still working when interrupted."""
    torch.manual_seed(0)
    path = folder / "big.safetensors"
    save_file({name: torch.randn(2048, 2048) for name in ("emb", "q", "mlp")}, str(path))
    return [
        "--file",
        str(path),
        "--tensor",
        "embedding=emb",
        "--tensor",
        "attention_projection=q",
        "--tensor",
        "mlp_projection=mlp",
        "--device",
        "cpu",
    ]


PROBES = {
    "health": lambda tmp: ["--torch"],  # its slowest path: torch imported
    "bandwidth": lambda tmp: ["--device", "cpu", "--repeats", "3"],
    "roofline": lambda tmp: [],
    "precision": _checkpoint,
    "allreduce": lambda tmp: ["--backend", "gloo", "--world-size", "2"],
    "transfer": lambda tmp: ["--device", "cpu", "--point-budget-s", "0.5"],
    "stress": lambda tmp: ["--seconds", "30"],
}


def _marked(token: str) -> list[int]:
    """Pids of live processes whose environment carries TOKEN (everything the test started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT_S} s for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_an_interrupted_probe_leaves_no_process_and_no_temporary_file(probe, tmp_path):
    scratch, lines = tmp_path / "tmp", tmp_path / "lines.txt"
    scratch.mkdir()
    lines.touch()
    token = f"RIG_DOSSIER_INTERRUPT_TEST={uuid.uuid4().hex}"
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT), token.split("=")[0]: token.split("=")[1]}
    host = subprocess.Popen(
        [sys.executable, "-m", "tests.interrupt_driver", str(lines), probe, *PROBES[probe](tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(lambda: "##progress" in lines.read_text() or host.poll() is not None, "the first progress line")
        assert host.poll() is None, f"{probe} ended before it could be interrupted: {host.stderr.read()!r}"
        if probe != "health":  # health's reading takes a fraction of a second: it may end first
            _wait_for(lambda: probe != "stress" or any(scratch.iterdir()), "the stress probe's folder")
        host.send_signal(signal.SIGINT)
        code = host.wait(timeout=WAIT_S)
    finally:
        if host.poll() is None:
            host.kill()
    said = lines.read_text()
    assert code == 130 or (probe == "health" and code == 0), said
    finished_first = probe == "health" and '"what": "done"' in said  # its reading ended before the signal came
    if code == 130 and not finished_first:
        assert f"{probe}: interrupted" in said, said  # the probe itself stopped, not killed
    _wait_for(lambda: not _marked(token), "every process of the probe to be gone")
    assert sorted(p.name for p in scratch.rglob("*")) == []
