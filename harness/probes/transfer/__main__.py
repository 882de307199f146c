"""`python -m harness.probes.transfer`: the transfer probe as its own process (one JSON document on stdout)."""

from harness.probes.contract import exit_now
from harness.probes.transfer import NAME, build_parser, measure, probe_main

exit_now(probe_main(NAME, build_parser, measure))
