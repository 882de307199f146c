"""`python -m harness.probes.stress`: the stress probe as its own process (one JSON document on stdout)."""

from harness.probes.stress import NAME, build_parser, measure, probe_main

raise SystemExit(probe_main(NAME, build_parser, measure))
