"""Judging two bundles against each other: did MINE reproduce THEIRS, figure by figure (issue 23).

`declare` holds what a registry entry declares for a comparison (DiffField, DiffFigure); `identity`
what each bundle was measured on; `environment` the facts every bundle has (host, tool, runner,
images) beside the entries'; `engine` judges every declared figure with the noise model
(harness.analysis.repeatability) into reproduced, not reproduced or not comparable (PASS, FAIL, SKIP),
the differences of environment first as the likely why; `statement` signs that judgement as an
in-toto statement naming both bundles, and checks one later. `dossier diff` shows the same judgement
unsigned (harness.present.diff).
"""
