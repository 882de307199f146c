"""Presentation, from a bundle's data only: report.md (`report`, with `figures` for numbers and
units), the plots (`plots/NAME.py`, rendered in the background by `plotting`), the tables
(`tables/NAME.py`) and the package's Jinja2 templates (`templating`, `templates/`).
"""
