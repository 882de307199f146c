"""`dossier accept`: a verified bundle judged against one SKU's acceptance profile.

Kept apart from I/O (harness/commands/accept.py): `profile` resolves thresholds and known-good
figures (the catalogue's rules and SKU, then a user's file), the criteria (`identity`, `rates`,
`memory_health`, `load`, `stress`, `transfer`; engine: harness.judge.engine) judge each from the
bundle's recomputed figures, `criteria` judges those the registry hands it (the required ones
failing closed), `outcome` the overall verdict (pass, warn, fail, incomplete), `junit` and
`predicate` the machine-readable results; the one page a buyer reads is harness.present.accept_summary.
"""
