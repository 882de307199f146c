"""Choosing the runner for a dossier: the one place `--runner` is turned into a Runner.

Other runners (a container runner) extend RUNNER_CHOICES and `select_runner`; every caller
records the runner's name and the `why` this returns.
"""

from __future__ import annotations

from harness.errors import UsageError
from harness.runners.interface import Runner
from harness.runners.local import LocalRunner

RUNNER_CHOICES = ("auto", "local")


def select_runner(choice: str = "auto") -> tuple[Runner, str]:
    """The runner for `choice` and a sentence saying why it was chosen (recorded in the bundle)."""
    if choice == "local":
        return LocalRunner(), "--runner local: probes ran as processes of this machine's Python"
    if choice == "auto":
        return LocalRunner(), ("--runner auto: this build of the harness has no container runner, "
                               "so probes ran as processes of this machine's Python")
    raise UsageError(f"unknown runner {choice!r}", hint=f"choose one of {', '.join(RUNNER_CHOICES)}")
