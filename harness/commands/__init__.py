"""One module per `dossier` subcommand; each has `add_parser(subparsers)`.

The explicit list below is the CLI's registry: its order is the order in `--help`.
"""

from harness.commands import (accept, allreduce, bandwidth, diff, fleet, health, health_diff, keygen,
                              precision, report, roofline, run, verify, verify_acceptance)

COMMANDS = [run, health, health_diff, bandwidth, roofline, precision, allreduce, verify, diff, report,
            keygen, accept, verify_acceptance, fleet]
