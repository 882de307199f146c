"""What a registry entry declares about one probe (harness/registry/NAME.py holds the entry).

A ProbeSpec names the probe (module harness.probes.NAME, schema schemas/NAME.schema.json), its
options (the probe module's OPTIONS), and what the host does with it: `command` for
`dossier NAME`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.probes.contract import Option


@dataclass(frozen=True)
class StepArgs:
    """A probe's arguments, the inputs they came from, and checkpoint provenance if any."""

    args: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: Mapping[str, Any] | None = None
    mounts: tuple[str, ...] = ()  # host paths a container runner must mount read-only


Prepare = Callable[[argparse.Namespace, list[str]], StepArgs]
Finish = Callable[[argparse.Namespace, dict[str, Any]], None]


@dataclass(frozen=True)
class CommandSpec:
    """`dossier NAME`: its help, default output file and timeout, and the host's own part.

    `host_options` are the command's options that never reach the probe (e.g. bandwidth's
    --plot). `prepare(args, argv)` runs before the probe: it checks what only the host can
    check (outputs, a checkpoint) and may change the probe's arguments (given the probe options'
    argv). `finish(args, document)` runs after the validated JSON is written: summary lines on
    stderr, plots and tables, and the exit-1 rule (raise harness.errors.CheckFailed)."""

    help: str
    description: str
    output: str
    timeout_s: float
    host_options: tuple[Option, ...] = ()
    prepare: Prepare | None = None
    finish: Finish | None = None


@dataclass(frozen=True)
class ProbeSpec:
    """One probe, declared once."""

    name: str  # module harness.probes.NAME, schema schemas/NAME.schema.json, `dossier NAME`
    title: str  # what it measures, in words
    lab: str  # the lab step it implements, e.g. "M1T1"
    options: tuple[Option, ...]  # the probe module's OPTIONS
    command: CommandSpec

    @property
    def host_options(self) -> tuple[Option, ...]:
        """The probe's options that `dossier NAME` offers too."""
        return tuple(o for o in self.options if o.host)
