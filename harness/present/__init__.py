"""Presentation, from a bundle's data only: report.md (`report`, with `folding` to keep it readable:
commands short, long values folded, lines wrapped), the plots (`plots/NAME.py`, rendered in the
background by `plotting`), the tables (`tables/NAME.py`, kept as bundle members by `step_tables`),
`dossier diff`'s comparison (`diff`, from the registry's diff rows) and its tables (`diff_tables`),
acceptance's one page (`accept_summary`) and the package's Jinja2 templates (`templating`,
`templates/`).
"""
