"""`dossier baseline`: an acceptance profile made from one golden unit's bundles or a fleet's.

`figures` reads, from each verified bundle, the figures the rate criteria judge; `noise` is the
run-to-run tolerance of each figure per SKU (the floor of every tolerance: the project's one noise
model, harness.analysis.repeatability, as `dossier reproduce` judges with); `config` and
`digests` what the inputs say of the configuration and the result digests; `inputs` reads each
bundle once and finds the one SKU they are of; `build` turns them into the profile document (robust
statistics per figure, harness.analysis.robust), judges every input against it and signs it
(harness.judge.acceptance.signed_profile). docs/accept.md explains the rules.
"""
