"""Options more than one command shares the meaning of: what a key option holds, and an old spelling.

`--signing-key` is always a private key (it signs), `--key` always a public key (it verifies), in
every command. An option once spelled otherwise is still accepted under its old name, with one line
on stderr naming the new one (`deprecated`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
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


# The most GPUs one node holds: the largest single-host systems have 8 (HGX, DGX) or 16; a count far
# past that (`--expect-gpus 1000000000`) is a typo, refused as one.
MAX_GPUS_PER_NODE = 64
MAX_NODES = 100_000  # a fleet: 10,000 nodes were simulated (README, "Limits"); ten times that is a typo
MINUTES_IN_A_YEAR = 525_600  # a Slurm time limit past a year is a typo


def count(low: int, high: int, why: str) -> Callable[[str], int]:
    """An argparse type: a whole number from LOW to HIGH (WHY says where HIGH comes from), refused
    in one line otherwise (`argument --expect-gpus: 1000000000 is not from 0 to 64 (...)`)."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not from {low} to {high} ({why})")
        return value

    whole.__name__ = f"whole number from {low} to {high}"
    return whole


def signed_envelope(data: bytes, path: Path, what: str, hint: str) -> None:
    """DATA, read from PATH, is a DSSE envelope at all (not JSON, not an envelope: bad input, exit 2, like
    any file that cannot be read); whether it is signed by the right key and says what it should is the
    caller's to check (exit 1)."""
    from harness.errors import UsageError
    from harness.signing import dsse

    try:
        dsse.parse(data)
    except dsse.EnvelopeError as exc:
        raise UsageError(f"{what} {path} is not a signed {what.lower()}: {exc}", hint=hint) from exc
