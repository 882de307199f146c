"""A probe process started ahead of its step (harness.probes.prestart), from the runner's side.

`start` spawns it with the environment the step will run in; `release` hands it the probe's arguments when
the step starts (its stdin line); `discard` ends one whose step does not run, or runs otherwise. A released
process is watched, timed and recorded exactly as a probe started then (LocalRunner.run); its record
keeps the probe's own command (`python -m PACKAGE.PROBE ARGS`, what it then ran) and a note saying when it
was started and what it imported before.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.probes.contract import utc_now

LAUNCHER = "harness.probes.prestart"


@dataclass
class Prestarted:
    """One waiting process: the module it will run, what it imported, its environment and start."""

    module: str
    imports: tuple[str, ...]
    env: Mapping[str, str]
    proc: subprocess.Popen
    started_at: str

    @classmethod
    def start(cls, python: str, module: str, imports: Sequence[str], env: Mapping[str, str]) -> Prestarted:
        proc = subprocess.Popen(
            [python, "-m", LAUNCHER, module, *imports],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
        return cls(module, tuple(imports), dict(env), proc, utc_now())

    def usable(self, module: str, env: Mapping[str, str]) -> bool:
        """Still waiting, for MODULE, in exactly ENV (a variable read at import time could differ otherwise)."""
        return self.proc.poll() is None and self.module == module and dict(env) == dict(self.env)

    def release(self, args: Sequence[str]) -> subprocess.Popen | None:
        """The process, now running the probe with ARGS; None where it could not be handed them."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"argv": list(args)}) + "\n").encode())
            self.proc.stdin.close()
        except OSError:
            self.discard()
            return None
        return self.proc

    def note(self) -> str:
        imported = ", ".join((*self.imports, self.module))
        return (
            f"started ahead of its step at {self.started_at} as `python -m {LAUNCHER} {self.module}"
            f"{' ' + ' '.join(self.imports) if self.imports else ''}`: it imported {imported} while the step "
            "before ran, touching no GPU, then was given its arguments at started_at and ran as this argv"
        )

    def discard(self) -> None:
        """End it (its stdin closed: it exits on its own; killed if it does not within a second)."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
            self.proc.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
