"""`python -m harness.probes.precision`: the precision probe as its own process (one JSON document on stdout)."""

from harness.probes.precision import NAME, build_parser, measure, probe_main

raise SystemExit(probe_main(NAME, build_parser, measure))
