"""`dossier diff` for a person: the verdict, hardware, software, configuration, activity and metrics
(each with its tolerance and verdict) as rich tables.

Values are shown as text (never a Python repr), each cell folded past CELL_LIMIT characters; where
two dicts or lists differ, only what differs is shown. On a terminal the tables take its width
and colour; elsewhere (a pipe, a file, a test) they are TEXT_WIDTH wide with no colour, so the
same comparison always prints the same bytes. `dossier diff --json` gives the whole comparison.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import IO, Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from harness.analysis.units import number, value_text
from harness.analysis.verdict import Verdict
from harness.escape import terminal
from harness.judge.reproduction.declare import SECTIONS
from harness.present.diff import Comparison, FieldDiff, MetricDiff

TEXT_WIDTH = 120
CELL_LIMIT = 90
VALUE_LIMIT = 16  # a metric's value that is not a number (a digest, a device list) in its column (--json: whole)
SHOWN_KEYS = 6  # differing keys of two dicts shown before "N more"


def cell(value: Any, key: str = "") -> str:
    """VALUE as the report writes it (harness.analysis.units.value_text: units from KEY, none,
    lists joined, an {"unavailable": why} as its reason), on one line, its control characters shown as
    escapes (harness.escape.terminal: a bundle's strings are data)."""
    return terminal(" ".join(value_text(key, value).split()))


def folded(text: str, limit: int = CELL_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 24].rstrip() + f" … (+{len(text) - limit + 24} chars, --json)"


def _items(n: int) -> str:
    return f"{n} item{'' if n == 1 else 's'}"


def _dict_difference(a: dict, b: dict, key: str) -> tuple[str, str]:
    keys = [k for k in list(a) + [k for k in b if k not in a] if a.get(k) != b.get(k)]
    shown, more = keys[:SHOWN_KEYS], len(keys) - SHOWN_KEYS
    tail = f"; … {more} more differ" if more > 0 else ""

    def side(d: dict) -> str:
        return "; ".join(f"{k}: {cell(d.get(k), key)}" for k in shown) + tail

    return f"{len(keys)} of {len(set(a) | set(b))} differ: {side(a)}", side(b)


def _list_difference(a: list, b: list, key: str) -> tuple[str, str]:
    only_a = [v for v in a if v not in b]
    only_b = [v for v in b if v not in a]
    if not only_a and not only_b:  # the same items, in another order or count
        return f"{_items(len(a))}: {cell(a, key)}", f"{_items(len(b))}: {cell(b, key)}"

    def side(items: list, only: list) -> str:
        if not items:
            return "none"
        return (
            f"{_items(len(items))}; only here: {cell(only, key)}" if only else f"{_items(len(items))}, all in the other"
        )

    return side(a, only_a), side(b, only_b)


def difference(a: Any, b: Any, key: str = "") -> tuple[str, str]:
    """How A and B (the values of field KEY) differ, as the text of each side: only the keys of two
    dicts that differ, only the items of two lists that the other lacks."""
    if isinstance(a, dict) and isinstance(b, dict) and "unavailable" not in a and "unavailable" not in b:
        return _dict_difference(a, b, key)
    if isinstance(a, list) and isinstance(b, list):
        return _list_difference(a, b, key)
    return cell(a, key), cell(b, key)


def fields_table(title: str, fields: list[FieldDiff]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("field", no_wrap=True)
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    for f in fields:
        if f.same:
            table.add_row(Text(f.field), Text(folded(cell(f.a, f.field))), Text("same"))
        else:
            a, b = difference(f.a, f.b, f.field)
            table.add_row(Text(f.field), Text(folded(a)), Text(folded(b)), style="bold")
    return table


def _value(value: Any, unit: str) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{number(value)} {unit}".rstrip()
    text = cell(value)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


SHOWN = {
    "reproduced": "reproduced",
    "not_reproduced": "NOT REPRODUCED",
    "not_comparable": "not comparable",
    "within_noise": "within noise",
    "moved": "moved",
}


def _tolerance(m: MetricDiff) -> str:
    if m.tolerance is None:
        return ""
    return "equal" if m.tolerance == 0 else f"+-{m.tolerance * 100:.2f} %"


def metrics_table(metrics: list[MetricDiff], title: str) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("metric", overflow="fold")
    columns: tuple[tuple[str, JustifyMethod, int], ...] = (
        ("A", "right", 15),
        ("B", "right", 15),
        ("B/A", "right", 6),
        ("tolerance", "right", 9),
        ("verdict", "left", 14),
    )
    for name, justify, width in columns:
        table.add_column(name, justify=justify, no_wrap=True, min_width=width)
    for m in metrics:
        table.add_row(
            *map(
                Text,
                (
                    terminal(m.metric),
                    _value(m.a, m.unit),
                    _value(m.b, m.unit),
                    f"{m.ratio:.4f}" if m.ratio is not None else "n/a",
                    _tolerance(m),
                    SHOWN[m.verdict],
                ),
            ),
            style="bold" if m.verdict == "not_reproduced" else None,
        )
    return table


def comparison_text(comparison: Comparison, name_a: str, name_b: str, notes: Sequence[str] = ()) -> str:
    """The tables as plain text, TEXT_WIDTH wide, no colour, no trailing spaces."""
    buffer = io.StringIO()
    _print(
        Console(file=buffer, width=TEXT_WIDTH, no_color=True, highlight=False, force_terminal=False, emoji=False),
        comparison,
        name_a,
        name_b,
        notes,
    )
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def print_comparison(
    comparison: Comparison, name_a: str, name_b: str, stream: IO[str], notes: Sequence[str] = ()
) -> None:
    """On a terminal, rich tables at its width; elsewhere comparison_text. NOTES (what verifying the
    bundles could not check) are said after the tables, before the answer line ends it."""
    console = Console(file=stream)
    if console.is_terminal:
        _print(console, comparison, name_a, name_b, notes)
    else:
        stream.write(comparison_text(comparison, name_a, name_b, notes))


def answer(comparison: Comparison) -> str:
    """The answer line, first and last: `verdict: NOT REPRODUCED: ... (exit 1)`, the exit code `dossier
    diff` gives, as `dossier reproduce` does (2: nothing that decides is comparable)."""
    judgement = comparison.judgement
    counts = judgement.counts()
    code = 2 if judgement.result == Verdict.SKIP else judgement.result.exit_code
    return (
        f"verdict: {SHOWN[judgement.word].upper()}: {terminal(judgement.why)} (B against A; "
        f"{counts['not_comparable']} deciding figures not comparable; {counts['informing_moved']} of "
        f"{counts['informing']} informing figures moved, not deciding; `dossier reproduce` signs it) (exit {code})"
    )


def _print(console: Console, comparison: Comparison, name_a: str, name_b: str, notes: Sequence[str] = ()) -> None:
    console.print(answer(comparison), markup=False, highlight=False, soft_wrap=True)
    console.print(f"A: {terminal(name_a)}", markup=False, highlight=False)
    console.print(f"B: {terminal(name_b)}", markup=False, highlight=False)
    console.print(f"rule: {comparison.judgement.rule.text}", markup=False, highlight=False)
    for section in SECTIONS:
        rows = [f for f in comparison.fields if f.section == section]
        if rows:
            console.print()
            console.print(fields_table(section, rows))
    console.print()
    deciding = [m for m in comparison.metrics if m.role == "decides"]
    informing = [m for m in comparison.metrics if m.role != "decides"]
    if comparison.metrics:
        console.print(
            metrics_table(deciding, "figures that decide (B/A; tolerance: the rule's, from the figure's noise)")
        )
        if informing:
            console.print()
            console.print(
                metrics_table(informing, "informing figures (B/A; shown, never deciding: within noise or moved)")
            )
    else:
        console.print("metrics: no metric was measured in either bundle", markup=False)
    for note in notes:
        console.print(terminal(note), markup=False, highlight=False, soft_wrap=True)
    console.print(answer(comparison), markup=False, highlight=False, soft_wrap=True)
