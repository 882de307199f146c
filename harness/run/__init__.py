"""`dossier run`: the plan (the registry's steps in order), each step run as its own probe process
and judged (schema), the run's records and progress display, and the provenance of tool and host.

`plan` the steps; `orchestrate` runs them and hands the records to harness.bundle; `outcome`
judges one probe run; `records` what a run recorded; `display` the progress; `provenance` and
`environment` what the bundle says about the tool, the host and the environment variables.
"""
