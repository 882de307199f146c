"""Options more than one command shares the meaning of: what a key option holds, and an old spelling.

`--signing-key` is always a private key (it signs), `--key` always a public key (it verifies), in
every command. An option once spelled otherwise is still accepted under its old name, with one line
on stderr naming the new one (`deprecated`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


class DeprecatedSpelling(argparse.Action):
    """An option's old spelling: stores its value where the new spelling does and says so on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"warning: {parser.prog} {option_string} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def deprecated(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, new: str, dest: str) -> None:
    """Accept OLD as a hidden spelling of NEW (a path option stored in DEST)."""
    parser.add_argument(old, dest=dest, type=Path, action=DeprecatedSpelling, new=new, help=argparse.SUPPRESS)


def add_signing_key(parser: argparse.ArgumentParser, help: str, old: str | None = None, **kwargs: Any) -> None:
    """--signing-key PRIV (a private key), and OLD, its former spelling in this command, deprecated."""
    parser.add_argument("--signing-key", type=Path, metavar="PRIV", help=help, **kwargs)
    if old:
        deprecated(parser, old, "--signing-key", "signing_key")
