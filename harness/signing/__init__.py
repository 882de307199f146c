"""Keys and signatures: Ed25519 keys (`keys`), DSSE envelopes (`dsse`), and in-toto Statements
signed in them (`statement`: the one sign/verify used by node bundles, fleet bundles and
acceptance verdicts).

Kept apart from measuring, validating and rendering: this package only turns bytes into
signed envelopes and back.
"""
