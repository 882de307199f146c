"""The `dossier` command line: one parser, one place where errors are caught."""

from __future__ import annotations

import argparse
import os
import select
import sys
import textwrap
import traceback
from collections.abc import Sequence
from typing import NoReturn

from harness import __version__, registry
from harness.analysis.verdict import EXIT_INCOMPLETE, Verdict, answer_line
from harness.commands import add_parsers
from harness.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, CheckFailed, DossierError
from harness.escape import terminal
from harness.probes.contract import exit_now


def description() -> str:
    """What `dossier --help` says first: the probes are the registry's."""
    probes = "; ".join(spec.title for spec in registry.PROBES)
    return (
        "Rig Dossier: is this machine what we paid for, and can someone else reproduce that answer?\n\n"
        + textwrap.fill(
            f"Runs measurement probes ({probes}), validates their JSON against schemas, and "
            "packages raw results, exact commands and environment into a signed, deterministic "
            "bundle with a Markdown report.",
            92,
        )
        + "\n"
    )


EPILOG = f"""\
exit codes: 0 ok (pass or warn); 1 a check failed; 2 bad usage or input (a missing or unreadable
file, an output that cannot be written); 3 a probe failed; 4 the environment cannot do what was
asked; {EXIT_INCOMPLETE} incomplete (nothing failed, but something required was not measured or judged);
{EXIT_INTERNAL} an internal error (a bug: one line, `dossier -v ...` shows the traceback);
{EXIT_INTERRUPTED} interrupted (Ctrl-C); {EXIT_BROKEN_PIPE} the reader of standard output went away
(e.g. `| head`). `dossier COMMAND --help` for each command.
"""


class OneLineParser(argparse.ArgumentParser):
    """argparse, its refusals said as every other refusal is: one line, exit 2. `nan` or `abc` for a
    number, an unknown option, a missing argument: `error: dossier check: argument --expect-gpus:
    invalid int value: 'abc' (dossier check --help lists the options)`, not argparse's usage block
    (`--help` shows it). Subcommands' parsers are of this class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> NoReturn:
        flat = " ".join(message.split())
        self.exit(2, f"error: {self.prog}: {flat} ({self.prog} --help lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="dossier", description=description(), epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_parsers(sub)
    for subparser in _subparsers(parser):  # `dossier verify ... -v` works too
        subparser.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="show tracebacks for errors"
        )
    return parser


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield child
                yield from _subparsers(child)


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost subcommand's parser (`dossier fleet collect` -> its own parser)."""
    while True:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, actions[0].dest, None) if actions else None
        if name is None:
            return parser
        parser = actions[0].choices[name]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse; an unknown option is reported with the usage of the subcommand it was given to.

    argparse hands a subparser's unknown arguments up to the top-level parser, whose error would
    show `usage: dossier [-h] ...` for `dossier verify x --bogus`."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll says POLLERR), so that a broken
    pipe to some other process (a probe, docker) is never mistaken for `| head`."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # stdout is not a real file: cannot tell
        return True


def _stdout_gone() -> int:
    """The reader of stdout went away (`| head`): stop quietly, as Python's docs recommend.

    Pointing stdout at /dev/null keeps the interpreter's final flush from failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (e.g. under pytest)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit
    return EXIT_BROKEN_PIPE


def _internal_error(exc: BaseException, verbose: bool) -> int:
    if verbose:
        traceback.print_exc()
    message = terminal(" ".join(str(exc).split())) or "(no message)"
    print(
        f"error: internal error: {type(exc).__name__}: {message} (run with -v for the traceback; please report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(sys.stdout, "reconfigure"):  # a line on stdout reaches a pipe in order with stderr's lines
        sys.stdout.reconfigure(line_buffering=True)
    args = parse(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except DossierError as exc:
        if args.verbose:
            traceback.print_exc()
        print(terminal(exc.diagnostics(), newlines=True), file=sys.stderr)  # a message may quote a file's text
        if isinstance(exc, CheckFailed):  # a check that failed is a verdict: said last, as every answer is
            print(answer_line(Verdict.FAIL, exit_code=exc.exit_code), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: nothing half-written was left behind", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:
        return _stdout_gone() if _stdout_reader_gone() else _internal_error(exc, args.verbose)
    except Exception as exc:  # noqa: BLE001 - the one place a bug becomes one line, not a traceback
        return _internal_error(exc, args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())


def entry() -> None:
    """`dossier` and `python -m harness`: main's exit code, the process ended as soon as its output is out
    (harness.probes.contract.exit_now: the exit handlers run, the interpreter's teardown of the ~300
    modules a command imports skipped: about 1 s of `dossier verify`'s end on the 2-core VM)."""
    exit_now(main())
