"""The Markdown report: rendered from a bundle's raw JSON only, so anyone can re-render it.

`figures` formats numbers with their units, `criteria` judges the lab's success criteria,
`render` fills harness/templates/report.md.j2.
"""
