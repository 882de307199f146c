"""A step's table: the Markdown its probe's registry entry renders from the step's raw document
(ProbeSpec.table, harness/present/tables/NAME.py). A bundle keeps it as tables/STEP.md, which
report.md links; `dossier verify` renders it again and compares the bytes."""

from __future__ import annotations

from typing import Any

from harness import registry


def has_table(probe: Any) -> bool:
    spec = registry.find(probe)
    return spec is not None and bool(spec.table)


def table_markdown(probe: Any, document: Any) -> str:
    """The table of PROBE's document (call only where has_table(probe)); a table module that
    raises gives one line saying so (verify renders the same), never a lost bundle."""
    spec = registry.spec(probe)
    try:
        text = str(registry.table_module(spec).render(document))
    except Exception as exc:  # noqa: BLE001 - kept as the table's text
        text = f"the {spec.table} table raised {type(exc).__name__}: {exc}"
    return text.rstrip("\n") + "\n"


def title(markdown: str) -> str:
    """The table's first heading, without its #s (what the report names the link by)."""
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return (markdown.splitlines() or [""])[0][:120]
