"""Progress of `dossier fleet collect`: a rich bar on a terminal, a plain line every N nodes elsewhere.

The bar counts nodes checked, with how many were rejected or failed so far; piped (CI logs, a
file) it prints one line per `every` nodes and one at the end, so a thousand-node collect writes
about ten lines, not a thousand.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class CollectProgress:
    """A context manager; `done(status)` once per node. DOING is the bar's text, LABEL and UNIT the
    plain line's (the collect's by default; the baseline's passes over the healthy nodes say theirs)."""

    def __init__(
        self,
        total: int,
        console: Console | None = None,
        every: int | None = None,
        doing: str = "checking node bundles",
        label: str = "fleet collect",
        unit: str = "nodes checked",
    ) -> None:
        self.label, self.unit = label, unit
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self.total = total
        self.every = every or max(1, min(100, -(-total // 10)))
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self.progress = Progress(
            TextColumn(doing),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
            console=self.console,
            disable=not self.live,
        )
        self._task = self.progress.add_task("nodes", total=total, tally="")

    def __enter__(self) -> CollectProgress:
        self.progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.progress.__exit__(kind, exc, trace)

    def tally(self) -> str:
        return ", ".join(f"{n} {status}" for status, n in sorted(self.counts.items()))

    def done(self, status: str) -> None:
        self.counts[status] += 1
        checked = sum(self.counts.values())
        if self.live:
            self.progress.update(self._task, completed=checked, tally=self.tally())
        elif checked % self.every == 0 or checked == self.total:
            print(
                f"{self.label}: {checked}/{self.total} {self.unit} ({self.tally()}), "
                f"{time.monotonic() - self.started:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def note(self, text: str) -> None:
        if self.live:
            self.progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)
