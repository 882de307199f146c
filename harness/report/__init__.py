"""The Markdown report: rendered from a bundle's raw JSON only, so anyone can re-render it.

`figures` formats numbers with their units, `render` fills harness/templates/report.md.j2 with
the lab's success criteria judged by harness.judge.lab.
"""
