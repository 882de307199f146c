"""One module per `dossier` subcommand; each has `add_parser(subparsers)`.

The explicit list below is the CLI's registry: its order is the order in `--help`.
"""

from harness.commands import allreduce, bandwidth, fleet, health, health_diff, precision, roofline

COMMANDS = [health, health_diff, bandwidth, roofline, precision, allreduce, fleet]
