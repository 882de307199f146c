"""`python -m harness.probes.health`: the health probe as its own process (one JSON document on stdout)."""

from harness.probes.health import NAME, build_parser, measure, probe_main

raise SystemExit(probe_main(NAME, build_parser, measure))
