"""Keys and signatures: Ed25519 keys (`keys`), DSSE envelopes (`dsse`).

Kept apart from measuring, validating and rendering: this package only turns bytes into
signed envelopes and back.
"""
