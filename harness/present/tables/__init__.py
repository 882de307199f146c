"""Markdown tables rendered on the host from a probe's raw document: `render(document) -> str`.

A registry entry names its table (ProbeSpec.table); report.md includes it, demoted a level.
"""
