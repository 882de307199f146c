"""The bundle file: writing deterministic tar.gz archives and reading them safely.

`layout` names the members, `write` makes byte-identical archives from identical inputs and
puts them in place atomically, `read` checks every header before it reads any content.
"""
