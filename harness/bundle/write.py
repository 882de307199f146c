"""Deterministic tar.gz bytes, and putting them in place without ever leaving half a bundle.

Same files in, same bytes out: entries sorted by name, ustar headers with uid/gid 0, empty
owner names, mode 0644 and one fixed mtime, the end-of-archive marker padded to a whole
record; gzip header with mtime 0 and no file name. `dossier verify` demands exactly this form
(harness/bundle/canonical.py), so the header bytes are written here field by field rather than
by `tarfile`, whose output has changed between Python releases (device-number fields of regular
files): a bundle made by one Python must stay canonical under another.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from harness.errors import UsageError

FIXED_MTIME = 946684800  # 2000-01-01T00:00:00Z: the one mtime every member carries
FILE_MODE = 0o644
COMPRESS_LEVEL = 9
BLOCK = 512
RECORD = 20 * BLOCK  # tar's default blocking factor: the archive is a whole number of records
END_OF_ARCHIVE = 2 * BLOCK  # two zero blocks
# What Python's gzip writes with mtime=0, no file name and compresslevel 9: magic, deflate,
# no flags, MTIME 0, XFL 2 (best compression), OS 255 (unknown).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
NAME_FIELD, PREFIX_FIELD = 100, 155
MAX_SIZE = 8**11 - 1  # the largest size an 11-digit octal field holds


def _octal(value: int, width: int) -> bytes:
    """A ustar number field: WIDTH-1 zero-padded octal digits and a NUL."""
    return b"%0*o\0" % (width - 1, value)


def _split_name(encoded: bytes) -> tuple[bytes, bytes]:
    """(prefix, name) as ustar stores a long name: the first split at a '/' that fits both fields."""
    if len(encoded) <= NAME_FIELD:
        return b"", encoded
    parts = encoded.split(b"/")
    for i in range(1, len(parts)):
        prefix, name = b"/".join(parts[:i]), b"/".join(parts[i:])
        if len(prefix) <= PREFIX_FIELD and len(name) <= NAME_FIELD:
            return prefix, name
    raise ValueError(f"member name {encoded[:60]!r}... is too long for a ustar header")


def ustar_header(name: str, size: int) -> bytes:
    """The one header block a bundle member NAME of SIZE bytes has (POSIX ustar, regular file)."""
    if not 0 <= size <= MAX_SIZE:
        raise ValueError(f"member size {size} does not fit a ustar header")
    prefix, short = _split_name(name.encode("utf-8"))
    block = b"".join(
        [
            short.ljust(NAME_FIELD, b"\0"),
            _octal(FILE_MODE, 8),
            _octal(0, 8),
            _octal(0, 8),
            _octal(size, 12),
            _octal(FIXED_MTIME, 12),
            b" " * 8,
            b"0",  # checksum placeholder, REGTYPE
            b"\0" * 100,
            b"ustar\x0000",
            b"\0" * 32,
            b"\0" * 32,  # linkname, magic+version, uname, gname
            b"\0" * 8,
            b"\0" * 8,
            prefix.ljust(PREFIX_FIELD, b"\0"),
            b"\0" * 12,  # devmajor/minor, prefix
        ]
    )
    checksum = b"%06o\0 " % sum(block)  # POSIX: the sum of the header bytes, checksum field as spaces
    return block[:148] + checksum + block[156:]


def padding(size: int) -> int:
    """Zero bytes after SIZE bytes of data, up to the next block boundary."""
    return -size % BLOCK


def end_of_archive(length: int) -> int:
    """Bytes after LENGTH bytes of members: two zero blocks, then zeros up to a whole record."""
    return END_OF_ARCHIVE + -(length + END_OF_ARCHIVE) % RECORD


def tar_bytes(files: Mapping[str, bytes]) -> bytes:
    """The canonical tar of FILES: sorted members, each header, data and zero padding, then the end."""
    out = io.BytesIO()
    for name in sorted(files):
        data = files[name]
        out.write(ustar_header(name, len(data)))
        out.write(data)
        out.write(b"\0" * padding(len(data)))
    out.write(b"\0" * end_of_archive(out.tell()))
    return out.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    """DATA as one gzip member with the canonical header (GZIP_HEADER).

    GzipFile, not gzip.compress: since Python 3.11 gzip.compress(mtime=0) lets zlib write the
    header, whose OS byte is 3 (Unix), not 255.
    """
    out = io.BytesIO()
    # filename="" leaves FNAME out of the header; mtime=0 zeroes MTIME.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=COMPRESS_LEVEL) as gz:
        gz.write(data)
    return out.getvalue()


def archive_bytes(files: Mapping[str, bytes]) -> bytes:
    """The tar.gz of `files` (member name -> content), byte-identical for identical input."""
    return gzip_bytes(tar_bytes(files))


def write_atomically(data: bytes, destination: Path) -> Path:
    """DATA as DESTINATION, atomically (see write_with): an existing bundle is never overwritten."""
    return write_with(lambda handle: handle.write(data), destination, hint="choose another --name")


def write_with(write: Callable[[BinaryIO], object], destination: Path, hint: str) -> Path:
    """Call WRITE on a hidden temporary file beside DESTINATION, fsync, then link it into place.

    An interrupt or crash before the link leaves no file under the final name (the temporary
    one is removed on any exception); an existing file is never overwritten (HINT says what to do).
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        raise UsageError(f"{destination} already exists", hint=hint)
    temporary = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        with open(temporary, "xb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, destination)  # fails rather than overwrite
        except FileExistsError:
            raise UsageError(f"{destination} already exists", hint=hint) from None
    finally:
        temporary.unlink(missing_ok=True)
    _fsync_dir(destination.parent)
    return destination


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
