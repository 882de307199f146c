"""Pure, standard-library analysis shared by probes and the verifier.

Each probe NAME that has headline figures provides `harness/analysis/NAME.py` with:

    headlines(document) -> dict[str, JSON value]
        The headline figures recomputed from the raw measured data in the document
        (never copied from the probe's own summary).
    discrepancies(document) -> list[str]
        One line per figure the document states that differs from the recomputation.

The report renders headlines; `dossier verify` recomputes them and fails on any discrepancy.
"""
