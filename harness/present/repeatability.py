"""report.md's repeatability section, from the bundle alone: what each spread covers, and the run-to-run
spreads `dossier run` recorded from the catalogue for this SKU (commands.json `repeatability`),
noisy figures first with why (harness.analysis.repeatability)."""

from __future__ import annotations

from typing import Any

from harness.analysis import repeatability as rules

SCOPES = ("Spreads measure different distances. Within one run: each roofline shape's spread across its timed "
          "windows (tens of milliseconds apart) and the bandwidth probe's spread across its three repeats (seconds "
          "apart, one process) say how steady the measurement was, not what the next run will read. Run to run: "
          "one figure across separate dossiers (separate processes and machine starts), measured per SKU and "
          "recorded below; it is the floor of any tolerance that compares two bundles.")


def _percent(value: Any) -> str:
    return f"{value:.2%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"


def lines(record: Any) -> list[str]:
    """The section's lines (Markdown), from commands.json's `repeatability` (None: not recorded)."""
    if record is None:
        return ["Not recorded in this bundle (bundles before format 5 do not carry it)."]
    found = [SCOPES, ""]
    if not isinstance(record, dict) or "unavailable" in record:
        why = record.get("unavailable") if isinstance(record, dict) else "malformed record"
        return found + [f"- Run to run: nothing applies here: {why}."]
    sources = record.get("sources") if isinstance(record.get("sources"), dict) else {}
    for name, source in sources.items():
        if isinstance(source, dict):
            found.append(f"- Run to run on {record.get('sku_id')}, measured {source.get('date')} over "
                         f"{source.get('runs')} dossiers and {source.get('machine_starts')} machine starts "
                         f"({source.get('machine')}; commit {source.get('commit')}; `{source.get('command')}`): "
                         f"{source.get('method')}. Recorded from the catalogue (version "
                         f"{record.get('catalogue_version')}) when this dossier ran.")
    bounds = record.get("bounds") if isinstance(record.get("bounds"), dict) else {}
    found.append("- Bounds: " + "; ".join(f"{kind} {_percent((b or {}).get('max_spread'))} ({(b or {}).get('what')})"
                                         for kind, b in bounds.items()) + f" ({record.get('bounds_source')}).")
    noisy = rules.noisy(record)
    if noisy:
        found.append("- **Noisy** (run-to-run spread over its kind's bound; a verdict on one of these is only as "
                     "firm as its spread):")
        by_why: dict[str, list[str]] = {}
        for e in noisy:
            by_why.setdefault(str(e.get("why")), []).append(
                f"{e['figure']} {_percent(e.get('spread'))} (bound {_percent(e.get('bound'))}, {e.get('kind')})")
        found += [f"  - {', '.join(figures)}: {why}" for why, figures in by_why.items()]
    steady = [e for e in record.get("figures") or [] if isinstance(e, dict) and e.get("noisy") is False]
    if steady:
        found.append("- Within their bounds: " + ", ".join(f"{e['figure']} {_percent(e.get('spread'))}" for e in steady)
                     + ".")
    return found
