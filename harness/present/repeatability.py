"""report.md's repeatability section, from the bundle alone: what each spread covers, and the run-to-run
spreads `dossier run` recorded from the catalogue for this SKU (commands.json `repeatability`),
noisy figures first with why (harness.analysis.repeatability)."""

from __future__ import annotations

from typing import Any

from harness.analysis import repeatability as rules
from harness.present.folding import fold

SCOPES = (
    "Within one run, a roofline shape's spread across its windows (milliseconds apart) and the bandwidth "
    "repeats' spread (seconds apart, one process) say how steady the measurement was, not what the next run "
    "reads. Run to run (below): one figure across separate dossiers and machine starts, per SKU; the floor of "
    "any tolerance comparing two bundles."
)


def _percent(value: Any) -> str:
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"


def lines(record: Any) -> list[str]:
    """The section's lines (Markdown), from commands.json's `repeatability` (None: not recorded)."""
    if record is None:  # bundles before format 5 carry none: no section
        return []
    found = [SCOPES, ""]
    if not isinstance(record, dict) or "unavailable" in record:
        why = record.get("unavailable") if isinstance(record, dict) else "malformed record"
        return found + [f"- Run to run: nothing applies here: {why}."]
    sources = record.get("sources")
    sources = sources if isinstance(sources, dict) else {}
    for source in sources.values():
        if isinstance(source, dict):
            found.append(
                f"- Measured on {record.get('sku_id')}: {source.get('runs')} runs of "
                f"{source.get('command')}, {source.get('machine_starts')} machine starts, "
                f"{source.get('date')}, commit {source.get('commit')} (catalogue version "
                f"{record.get('catalogue_version')}; how, in commands.json)."
            )
    bounds = record.get("bounds")
    bounds = bounds if isinstance(bounds, dict) else {}
    found.append(
        "- Bounds: "
        + ", ".join(f"{kind.replace('_', '-')} {_percent((b or {}).get('max_spread'))}" for kind, b in bounds.items())
        + "."
    )
    noisy = rules.noisy(record)
    if noisy:
        found.append("- **Noisy** (over its bound; a verdict on one is only as firm as its spread):")
        by_why: dict[str, list[str]] = {}
        for e in noisy:
            by_why.setdefault(str(e.get("why")), []).append(f"{e['figure']} {_percent(e.get('spread'))}")
        found += [f"  - {', '.join(figures)}: {why}" for why, figures in by_why.items()]
    steady = [e for e in record.get("figures") or [] if isinstance(e, dict) and e.get("noisy") is False]
    if steady:  # a list of figures, folded as the report folds every one (the whole list is in commands.json)
        found.append(
            "- Within bounds: "
            + fold(
                ", ".join(f"{e['figure']} {_percent(e.get('spread'))}" for e in steady), "commands.json repeatability"
            )
            + "."
        )
    return found
