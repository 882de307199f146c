"""`dossier accept`: a verified bundle judged against one SKU's acceptance profile.

Kept apart from I/O (harness/commands/accept.py): `profile` resolves thresholds and known-good
figures (catalogue, then a user's file), the criteria (`identity`, `rates`, `memory_health`,
`load`; engine: harness.judge.engine) judge each from the bundle's recomputed figures,
`outcome` the verdict PASSED / WARNED / FAILED, `junit` and `predicate` the machine-readable
results, `summary` the one page a buyer reads.
"""
