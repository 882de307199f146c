"""The stress probe's first worker, started ahead with the probe (harness.probes.prestart).

When `dossier run` starts the stress probe's process ahead of its step, the launcher calls this package's
`prestart()`: one worker process is started too, `python -m harness.probes.prestart
harness.probes.stress.worker torch`, which imports torch (about 3 s on the H200) while the step before
measures, touches no GPU, and waits for its arguments. When the probe runs, its supervisor hands the first
device's worker those arguments (`take`) instead of starting one; the worker then runs exactly as one started
then (its events and stderr the same files' kind), and the probe says so on its stderr. One worker: the
one-GPU case; with more GPUs the others start when the probe runs, as before. A waiting worker whose probe
never runs ends when the probe's process does (its stdin closes); its folder is removed at that exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.probes.contract import utc_now
from harness.probes.lifetime import parent_env
from harness.probes.scratch import owned_folder

LAUNCHER = "harness.probes.prestart"
WORKER_MODULE = "harness.probes.stress.worker"
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # as the supervisor has always put it on PYTHONPATH


@dataclass
class Waiting:
    proc: subprocess.Popen
    stderr_path: Path
    env: Mapping[str, str]
    started_at: str


WAITING: list[Waiting] = []


def worker_environment() -> dict[str, str]:
    """The environment the supervisor starts its workers in (StressSupervisor.run)."""
    env = {**os.environ, **parent_env()}  # each worker checks its parent is still this process
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    return env


def prestart() -> None:
    """One worker started now, importing torch, to run when the probe does."""
    folder = owned_folder("stress-warm-")  # removed at exit, or by the next start after a SIGKILL
    stderr_path, env = folder / "worker.stderr", worker_environment()
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", LAUNCHER, WORKER_MODULE, "torch"],
            stdin=subprocess.PIPE,
            stdout=stderr,
            stderr=stderr,
            env=env,
        )
    WAITING.append(Waiting(proc, stderr_path, env, utc_now()))


def take(args: list[str], env: Mapping[str, str]) -> tuple[subprocess.Popen, Path, str] | None:
    """A waiting worker, now running with ARGS, its stderr file and when it was started; None where none waits
    in exactly ENV."""
    while WAITING:
        waiting = WAITING.pop(0)
        if waiting.proc.poll() is not None or dict(waiting.env) != dict(env):
            continue
        assert waiting.proc.stdin is not None
        try:
            waiting.proc.stdin.write((json.dumps({"argv": args}) + "\n").encode())
            waiting.proc.stdin.close()
        except OSError:
            continue
        return waiting.proc, waiting.stderr_path, waiting.started_at
    return None
