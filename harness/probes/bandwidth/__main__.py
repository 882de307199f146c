"""`python -m harness.probes.bandwidth`: the bandwidth probe as its own process (one JSON document on stdout)."""

from harness.probes.bandwidth import NAME, build_parser, measure, probe_main
from harness.probes.contract import exit_now

exit_now(probe_main(NAME, build_parser, measure))
