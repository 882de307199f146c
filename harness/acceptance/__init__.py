"""`dossier accept`: a verified bundle judged against one SKU's acceptance profile.

Kept apart from I/O (harness/commands/accept.py): `profile` resolves thresholds and known-good
figures (catalogue, then a user's file), `criteria` judges each criterion from the bundle's
recomputed figures, `junit` and `predicate` write the machine-readable results, `summary`
renders the one page a buyer reads.
"""
