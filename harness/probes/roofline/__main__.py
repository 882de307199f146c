"""`python -m harness.probes.roofline`: the roofline probe as its own process (one JSON document on stdout)."""

from harness.probes.contract import exit_now
from harness.probes.roofline import NAME, build_parser, measure, probe_main

exit_now(probe_main(NAME, build_parser, measure))
