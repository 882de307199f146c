"""The progress display of `dossier run` and of every single-probe command (`dossier health`...):
one line per step, a bar fed by `##progress` lines.

On a terminal it is a rich live display; elsewhere (CI logs, pipes) it prints one plain line
when a step starts and one when it ends. Runners call `stderr_line` from their reader thread.
A probe's other stderr lines are kept in the bundle's log by `dossier run`; a single-probe
command, which keeps no log, shows them (`show_probe_lines`). Progress lines are never printed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.text import Text

from harness.present.folding import short_command
from harness.probes.contract import prefixed_json

PROGRESS_PREFIX = "##progress "
SHOWN_COMMAND_LIMIT = 160  # a command line on screen is cut past this (commands.json has it whole)
SHOWN_SIZING_LIMIT = 140  # a completed step's sizing on screen is cut past this (its JSON has it whole)


def parse_progress(line: str) -> dict[str, Any] | None:
    """The {done, total, what} of a probe's progress line, or None for any other line."""
    value = prefixed_json(line, PROGRESS_PREFIX)
    if value is None or not isinstance(value.get("done"), (int, float)):
        return None
    return value


def shown_command(runner: object, probe: str, args: Sequence[str]) -> str:
    """A probe's command as the display shows it: python -m PACKAGE.PROBE ARGS, long arguments
    folded as the report folds them (JSON to its length, paths to their file name) and the line cut
    past SHOWN_COMMAND_LIMIT characters (the runner's interpreter, container and the whole argv are
    in the bundle's commands.json)."""
    line = short_command(["python", "-m", f"{getattr(runner, 'package', 'harness.probes')}.{probe}", *args])
    if len(line) <= SHOWN_COMMAND_LIMIT:
        return line
    cut = line.rfind(" ", 0, SHOWN_COMMAND_LIMIT - 30)
    return line[: cut if cut > 0 else SHOWN_COMMAND_LIMIT - 30] + " … (whole in commands.json)"


class StepClockColumn(ProgressColumn):
    """The time since the step began, running until the step ends (rich's TimeElapsedColumn stops
    when the bar is full, though the probe still works: writing its document, closing CUDA)."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed
        if elapsed is None:
            return Text("-:--:--", style="progress.elapsed")
        seconds = int(max(0.0, elapsed))
        return Text(f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}", style="progress.elapsed")


class RunDisplay:
    """Shows which step runs and how far it is; a context manager around the whole run."""

    def __init__(self, total_steps: int, console: Console | None = None, show_probe_lines: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self.total_steps = total_steps
        self.show_probe_lines = show_probe_lines
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[what]}"),
            StepClockColumn(),
            console=self.console,
            disable=not self.live,
        )
        self._task: TaskID | None = None
        self._index = 0

    def __enter__(self) -> RunDisplay:
        self.progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.progress.__exit__(kind, exc, trace)

    def _say(self, text: str) -> None:
        if self.live:
            self.progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def begin(self, step: str, title: str, command: str, again: bool = False) -> None:
        """A step starts (AGAIN: the same step once more, a retest, keeping its number)."""
        self._index += 0 if again else 1
        label = f"[{self._index}/{self.total_steps}] {step}"
        self._say(f"{label}: {title}\n    $ {command}")
        self._task = self.progress.add_task(label, total=None, what="starting")

    def stderr_line(self, line: str) -> None:
        """A probe's stderr line: progress lines move the bar; others are shown only when asked
        (show_probe_lines), else kept in the log only."""
        update = parse_progress(line)
        if update is None:
            if self.show_probe_lines and not line.startswith(PROGRESS_PREFIX):
                self._say(line)
            return
        if self._task is None:
            return
        total = update.get("total") if isinstance(update.get("total"), (int, float)) else None
        self.progress.update(self._task, completed=update["done"], total=total, what=str(update.get("what", ""))[:60])

    def end(self, step: str, status: str, detail: str) -> None:
        """A step ends: its status, and DETAIL (a failure's reason whole; a completed step's sizing cut
        past SHOWN_SIZING_LIMIT characters: its document says it whole, a progress line need not)."""
        detail = " ".join(str(detail).split())
        if not status.startswith("FAILED") and len(detail) > SHOWN_SIZING_LIMIT:
            cut = detail.rfind(" ", 0, SHOWN_SIZING_LIMIT)
            detail = detail[: cut if cut > 0 else SHOWN_SIZING_LIMIT] + " … (whole in its JSON's sizing)"
        if self._task is not None:
            self.progress.update(self._task, what=status)
            self.progress.stop_task(self._task)
            self._task = None
        self._say(f"    {step}: {status}{' - ' + detail if detail else ''}")

    def skip(self, step: str, why: str) -> None:
        self._index += 1
        self._say(f"[{self._index}/{self.total_steps}] {step}: not run - {why}")

    def host(self, step: str, status: str) -> None:
        """A step computed on the host (no process), numbered like the others."""
        self._index += 1
        self._say(f"[{self._index}/{self.total_steps}] {step}: {status}")

    def note(self, text: str) -> None:
        self._say(text)
