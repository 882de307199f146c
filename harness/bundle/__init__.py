"""The bundle file: it stores and reads, and knows no probe.

`layout` names the members (and the format version); `seal` signs them (an in-toto Statement
through harness.signing); `write` makes byte-identical archives and puts them in place
atomically; `read` checks every header before it reads any content; `view` sees a bundle's files
as data (a recorded analysis name is resolved by the lookup its reader hands it). Assembling a
run's records is harness.run.assemble; checking a bundle, harness.verify; comparing two,
harness.present.diff.
"""
