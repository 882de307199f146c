"""What a collect reads of a fleet's run directory: files the job's nodes wrote, so another party's.

A node's log, its exit status, the job's node list, a shard's partial result: each is read only if it
is a regular file (never through a symbolic link, never a FIFO or a device, each opened without
blocking and checked by fstat on what was opened: harness.paths.read_regular) and at most its cap;
anything else is left unread, with why, and never put in the fleet bundle (a node log linked to the
fleet's private key stays out of it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.paths import NotARegularFile, read_regular

LOG_CAP = 64 * 2**20  # a node's log (its tail is kept, the whole log goes in the fleet bundle)
RECORD_CAP = 16 * 2**20  # a node list, an exit status, a submission record, a shard's partial result


def read(path: Path, cap: int = RECORD_CAP) -> bytes | None:
    """PATH's bytes, None when it does not exist; NotARegularFile (exit 2) when it is not a regular file."""
    if not os.path.lexists(path):
        return None
    return read_regular(path, "", cap, follow_links=False)


def read_or_why(path: Path, cap: int = LOG_CAP) -> tuple[bytes | None, str | None]:
    """(PATH's bytes, None), (None, None) when it does not exist, or (None, why it was not read)."""
    try:
        return read(path, cap), None
    except NotARegularFile as exc:
        return None, str(exc).strip()
    except OSError as exc:
        return None, f"{path}: cannot be read ({exc.strerror or exc})"


def not_regular(path: Path) -> str | None:
    """Why PATH, which exists, is not a regular file (a link, a FIFO, a device, a folder), or None."""
    mode = os.lstat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    kind = "a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    return f"{path.name} is {kind}, which a collect never reads"
