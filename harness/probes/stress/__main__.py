"""`python -m harness.probes.stress`: the stress probe as its own process (one JSON document on stdout)."""

from harness.probes.contract import exit_now
from harness.probes.stress import NAME, build_parser, measure, probe_main

exit_now(probe_main(NAME, build_parser, measure))
