"""`dossier` run in-process with its standard output and error captured (the tests' one way to call the CLI)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from harness.cli import main


def dossier(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `dossier ARGV...` (a usage error argparse refuses exits as the
    command does: its code, its one line on stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()
