"""The local runner: the probe as a subprocess of the current interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from harness.probes.contract import utc_now
from harness.runners.environment import recorded_environment
from harness.runners.interface import STOP_GRACE_S, LineCallback, ProbeInvocation, ProbeRun
from harness.runners.prestart import Prestarted

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _pump(stream, sink: bytearray, on_line: LineCallback | None) -> None:
    for line in iter(stream.readline, b""):
        sink.extend(line)
        if on_line is not None:
            on_line(line.decode("utf-8", "replace").rstrip("\n"))
    stream.close()


class LocalRunner:
    """Starts `python -m harness.probes.NAME ARGS` in its own process group (so a Ctrl-C at the
    terminal reaches `dossier`, which then stops the probe: `stop_group`)."""

    name = "local"
    host_pids = True  # its probes' processes have the host's process ids (a reading can name another's)

    def __init__(self, python: str | None = None, package: str = "harness.probes") -> None:
        self.python = python or sys.executable
        self.package = package  # tests point this at deliberately broken probes

    def argv_for(self, invocation: ProbeInvocation) -> list[str]:
        return [self.python, "-m", f"{self.package}.{invocation.probe}", *invocation.args]

    def environment(self, invocation: ProbeInvocation) -> dict[str, str]:
        env = dict(os.environ)
        env.update(invocation.env)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def prestart(self, probe: str, imports: tuple[str, ...] = ()) -> Prestarted:
        """PROBE's process started now, importing IMPORTS and its package, to run when its step starts
        (`run(..., warm=)`): it touches no GPU before."""
        return Prestarted.start(
            self.python, f"{self.package}.{probe}", imports, self.environment(ProbeInvocation(probe))
        )

    def run(
        self, invocation: ProbeInvocation, on_stderr_line: LineCallback | None = None, warm: Prestarted | None = None
    ) -> ProbeRun:
        """The probe run to its end; WARM, its process started ahead (prestart), is used where it still
        waits in this invocation's environment, else discarded and the probe started now."""
        argv = self.argv_for(invocation)
        env = self.environment(invocation)
        started = utc_now()
        proc, note = None, None
        if warm is not None and warm.usable(argv[2], env):
            proc, note = warm.release(invocation.args), warm.note()
        elif warm is not None:
            warm.discard()
        if proc is None:
            note = None
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
            )
        lower_priority(proc.pid, invocation.nice)
        out, err = bytearray(), bytearray()
        pumps = [
            threading.Thread(target=_pump, args=(proc.stdout, out, None), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err, on_stderr_line), daemon=True),
        ]
        for t in pumps:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=invocation.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_group(proc)
        except BaseException:  # Ctrl-C or SIGTERM: the probe (and its children) stop first, cleanly
            stop_group(proc)
            _join(pumps)  # the probe's last lines (what it stopped) reach the display
            raise
        _join(pumps)
        return ProbeRun(
            probe=invocation.probe,
            argv=tuple(argv),
            env=recorded_environment(env),
            runner=self.name,
            image=None,
            started_at=started,
            finished_at=utc_now(),
            exit_code=None if timed_out else proc.returncode,
            timed_out=timed_out,
            stdout=bytes(out),
            stderr=bytes(err),
            note="; ".join(
                filter(None, [note, f"killed after {invocation.timeout_s:g} s timeout" if timed_out else None])
            )
            or None,
        )


def lower_priority(pid: int, nice: int) -> None:
    """The process's niceness raised to NICE (its threads made later inherit it); nothing where it cannot be."""
    if nice > 0:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
        except OSError:
            pass


def _join(pumps: list[threading.Thread]) -> None:
    for t in pumps:
        t.join(timeout=10)


def stop_group(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the probe's process group (the probe ends its workers and removes its temporary
    folders: harness.probes.contract.probe_main), then SIGKILL to the group if the probe is still
    running GRACE_S later, or at once on a second interrupt; returns when the probe has ended."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # still running after the grace
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    except BaseException:  # interrupted again while waiting: no more waiting
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
        raise
    _signal_group(proc, signal.SIGKILL)  # anything of the group the probe left behind


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
