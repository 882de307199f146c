"""The `dossier` command line: one parser, one place where errors are caught."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from harness import __version__
from harness.commands import COMMANDS
from harness.errors import DossierError

DESCRIPTION = """\
Rig Dossier: is this machine what we paid for, and can someone else reproduce that answer?

Runs measurement probes (health, HBM bandwidth, roofline, precision, all-reduce), validates
their JSON against schemas, and packages raw results, exact commands and environment into a
signed, deterministic bundle with a Markdown report.
"""

EPILOG = """\
exit codes: 0 ok; 1 a check failed; 2 bad usage or input; 3 a probe failed;
4 the environment cannot do what was asked. `dossier COMMAND --help` for each command.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dossier", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DossierError as exc:
        if args.verbose:
            traceback.print_exc()
        print(exc.diagnostics(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: nothing half-written was left behind", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
