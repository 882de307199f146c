"""Choosing the runner for probes: the one place `--runner` becomes a Runner, with why.

The container runner (issue 8) replaces this module with one that adds `docker` and makes
`auto` pick it when an engine and the pinned image are present; the signature stays
`select_runner(choice, *, image, gpus, mem_limit, output_dir) -> (runner, why)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.errors import UsageError
from harness.runners.interface import Runner
from harness.runners.local import LocalRunner

RUNNER_CHOICES: Sequence[str] = ("auto", "local")


def select_runner(choice: str, *, image: str | None = None, gpus: str | None = None,
                  mem_limit: str | None = None, output_dir: Path | None = None) -> tuple[Runner, str]:
    """(runner, why): the sentence the bundle records about which runner ran and why."""
    if choice == "local":
        return LocalRunner(), "--runner local: probes run as local processes"
    if choice == "auto":
        return LocalRunner(), ("--runner auto chose local: this build of the harness has no container "
                               "runner")
    raise UsageError(f"--runner {choice!r}: expected one of {', '.join(RUNNER_CHOICES)}")
