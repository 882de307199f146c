"""The progress display of `dossier run` and of every single-probe command (`dossier health`...):
one line per step, a bar fed by `##progress` lines.

On a terminal it is a rich live display; elsewhere (CI logs, pipes) it prints one plain line
when a step starts and one when it ends. Runners call `stderr_line` from their reader thread.
A probe's other stderr lines are kept in the bundle's log by `dossier run`; a single-probe
command, which keeps no log, shows them (`show_probe_lines`). Progress lines are never printed.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

PROGRESS_PREFIX = "##progress "


def parse_progress(line: str) -> dict[str, Any] | None:
    """The {done, total, what} of a probe's progress line, or None for any other line."""
    if not line.startswith(PROGRESS_PREFIX):
        return None
    try:
        value = json.loads(line[len(PROGRESS_PREFIX):])
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("done"), (int, float)):
        return None
    return value


def shown_command(runner: object, probe: str, args: Sequence[str]) -> str:
    """A probe's command as the display shows it: python -m PACKAGE.PROBE ARGS (the runner's
    interpreter and container are in the bundle's commands.json)."""
    return shlex.join(["python", "-m", f"{getattr(runner, 'package', 'harness.probes')}.{probe}", *args])


class RunDisplay:
    """Shows which step runs and how far it is; a context manager around the whole run."""

    def __init__(self, total_steps: int, console: Console | None = None, show_probe_lines: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self.total_steps = total_steps
        self.show_probe_lines = show_probe_lines
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.fields[what]}"),
                                 TimeElapsedColumn(), console=self.console, disable=not self.live)
        self._task: TaskID | None = None
        self._index = 0

    def __enter__(self) -> RunDisplay:
        self.progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
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
        self.progress.update(self._task, completed=update["done"], total=total,
                             what=str(update.get("what", ""))[:60])

    def end(self, step: str, status: str, detail: str) -> None:
        if self._task is not None:
            self.progress.update(self._task, what=status)
            self.progress.stop_task(self._task)
            self._task = None
        self._say(f"    {step}: {status}{' - ' + detail if detail else ''}")

    def skip(self, step: str, why: str) -> None:
        self._index += 1
        self._say(f"[{self._index}/{self.total_steps}] {step}: not run - {why}")

    def note(self, text: str) -> None:
        self._say(text)
