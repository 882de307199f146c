"""`dossier run`: the plan (the registry's steps in order), each step run as its own probe process
and judged (schema), the run's records, their assembly into a bundle, the progress display, and
the provenance of tool and host.

`plan` the steps; `orchestrate` runs them; `assemble` makes the bundle's members from the records
(the report, plots and tables rendered); `outcome` judges one probe run; `records` what a run
recorded; `display` the progress; `provenance` what the bundle says about the tool and the host
(the allowlisted environment is harness.runners.environment).
"""
