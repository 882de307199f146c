"""A step's table: the Markdown its probe's registry entry renders from the step's raw document
(ProbeSpec.table, harness/present/tables/NAME.py). A bundle keeps it as tables/STEP.md, which
report.md links; `dossier verify` renders it again and compares the bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import registry


def has_table(probe: Any) -> bool:
    spec = registry.find(probe)
    return spec is not None and bool(spec.table)


def table_markdown(probe: Any, document: Any, documents: Mapping[str, Any]) -> str:
    """The table of PROBE's document (call only where has_table(probe)); DOCUMENTS: the bundle's
    documents by step, for a table module with `render_in_bundle(document, documents)` that sets its
    figures beside another step's (the stress table beside the roofline's burst). A table module that
    raises gives one line saying so (verify renders the same), never a lost bundle."""
    spec = registry.spec(probe)
    try:
        module = registry.table_module(spec)
        assert module is not None, f"{spec.name} has no table module"  # callers ask has_table first
        beside = getattr(module, "render_in_bundle", None)
        text = str(beside(document, documents) if beside else module.render(document))
    except Exception as exc:  # noqa: BLE001 - kept as the table's text
        text = f"the {spec.table} table raised {type(exc).__name__}: {exc}"
    return text.rstrip("\n") + "\n"


def title(markdown: str) -> str:
    """The table's first heading, without its #s (what the report names the link by)."""
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return (markdown.splitlines() or [""])[0][:120]
