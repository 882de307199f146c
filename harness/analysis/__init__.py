"""Pure, standard-library analysis shared by probes and the verifier.

Each probe NAME that has headline figures has `harness/analysis/NAME/` (one module,
`harness/analysis/NAME.py`, where it needs no more), whose face gives:

    headlines(document) -> dict[str, JSON value]
        The headline figures recomputed from the raw measured data in the document
        (never copied from the probe's own summary).
    discrepancies(document) -> list[str]
        One line per figure the document states that differs from the recomputation.

The report renders headlines; `dossier verify` recomputes them and fails on any discrepancy.
Beside them: `verdict` (the verdict and step-status vocabularies), `units` (a figure with the
unit its key names), `cross_checks` (figures one step took from another), `fleet` (nodes
compared), and what several probes' analyses share (`topology`, `device_mapping`, `clock_events`).
"""
