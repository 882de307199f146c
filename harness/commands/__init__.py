"""One module per `dossier` subcommand; each has `add_parser(subparsers)`.

The explicit list below is the CLI's registry: its order is the order in `--help`.
"""

from harness.commands import (accept, allreduce, bandwidth, diff, health, health_diff, keygen, report, run,
                              verify, verify_acceptance)

COMMANDS = [run, health, health_diff, bandwidth, allreduce, verify, diff, report, keygen, accept, verify_acceptance]
