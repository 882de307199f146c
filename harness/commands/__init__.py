"""One module per `dossier` subcommand; each has `add_parser(subparsers)`.

The explicit list below is the CLI's registry: its order is the order in `--help`.
"""

from harness.commands import bandwidth, fleet, health

COMMANDS = [health, bandwidth, fleet]
