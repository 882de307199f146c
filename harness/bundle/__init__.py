"""The bundle: what a run's records become, and how anyone checks it.

`layout` names the members; `assemble` builds them from a RunRecord (raw JSON, logs, plots,
commands.json, environment.json, report.md); `seal` signs them (an in-toto Statement through
harness.signing); `write` makes byte-identical archives and puts them in place atomically;
`read` checks every header before it reads any content; `view` sees a bundle's files as data;
`verify` checks a bundle (`content`: the signed content's schemas, figures and report); `diff`
compares two.
"""
