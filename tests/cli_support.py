"""`dossier` run in-process with its standard output and error captured (the tests' one way to call the CLI)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from harness.cli import main


def dossier(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `dossier ARGV...`."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
