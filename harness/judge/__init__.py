"""Judging a bundle: one criteria engine for the report's lab criteria and `dossier accept`.

`engine` holds Criterion, Result and `evaluate`; `facts` is what a criterion reads from a bundle
(each step's recomputed figures, or why there are none); `lab` holds the lab's success criteria
that report.md judges; `acceptance` judges a verified bundle against a SKU's profile. The
verdict vocabulary itself is harness.analysis.verdict (the probes use it too).
"""
