"""Reading a bundle without extracting it, checking every header before reading any content.

The reader understands exactly what the writer makes: a gzip stream holding a ustar archive of
regular files. Pass one walks the 512-byte headers (parsed by `tarfile.TarInfo.frombuf`, never
following pax or GNU long-name records), rejecting links, devices, directories, absolute or
`..` names, duplicates and declared sizes over the caps; it skips member data in bounded
chunks. Only when every header passes does pass two read and hash the contents.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK = 512
CHUNK = 1 << 20
DEFAULT_MAX_TOTAL_BYTES = 1 << 30  # 1 GiB of declared content
DEFAULT_MAX_MEMBERS = 10_000
REGULAR_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
TYPE_NAMES = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link",
              tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
              tarfile.FIFOTYPE: "a FIFO", tarfile.DIRTYPE: "a directory",
              tarfile.CONTTYPE: "a contiguous file", tarfile.XHDTYPE: "a pax extended header",
              tarfile.XGLTYPE: "a pax global header", tarfile.GNUTYPE_LONGNAME: "a GNU long name",
              tarfile.GNUTYPE_LONGLINK: "a GNU long link", tarfile.GNUTYPE_SPARSE: "a sparse file"}


class UnsafeBundle(Exception):
    """The archive breaks the bundle format; nothing was extracted and no content was read."""


@dataclass(frozen=True)
class MemberHeader:
    name: str
    size: int


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    sha256: str
    data: bytes | None  # kept only for the members the caller asked to keep


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    max_members: int = DEFAULT_MAX_MEMBERS


def check_name(name: str) -> str | None:
    """Why NAME is not a safe relative member name, or None when it is."""
    if not name:
        return "an empty name"
    if name.startswith("/"):
        return "an absolute path"
    if "\\" in name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "a backslash or control character in the name"
    parts = name.split("/")
    if ".." in parts:
        return "a '..' component"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' component"
    return None


def _open(path: Path) -> BinaryIO:
    return gzip.open(path, "rb")


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise UnsafeBundle("the archive ends in the middle of a record (truncated)")
    return data


def _chunks(stream: BinaryIO, size: int, buffer: bytearray) -> Iterator[memoryview]:
    """SIZE bytes of STREAM as views into one reused BUFFER (no allocation per chunk)."""
    view = memoryview(buffer)
    while size > 0:
        got = stream.readinto(view[:min(size, len(buffer))])
        if not got:
            raise UnsafeBundle("the archive ends in the middle of a record (truncated)")
        size -= got
        yield view[:got]


def _skip(stream: BinaryIO, size: int, buffer: bytearray) -> None:
    for _ in _chunks(stream, size, buffer):
        pass


def _padded(size: int) -> int:
    return -size % BLOCK


def _headers(stream: BinaryIO) -> Iterator[MemberHeader]:
    """Each member's header in order; stops at the end-of-archive block. Skips data, unread."""
    buffer = bytearray(CHUNK)
    while True:
        block = _read_exact(stream, BLOCK)
        if block == b"\0" * BLOCK:
            return
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "strict")
        except (tarfile.HeaderError, UnicodeDecodeError) as exc:
            raise UnsafeBundle(f"a malformed tar header ({exc})") from exc
        if info.type not in REGULAR_TYPES:
            kind = TYPE_NAMES.get(info.type, f"tar type {info.type!r}")
            raise UnsafeBundle(f"member {info.name!r} is {kind}; a bundle holds regular files only")
        if info.size < 0:
            raise UnsafeBundle(f"member {info.name!r} declares a negative size")
        yield MemberHeader(info.name, info.size)
        # The caller has checked this header before we move past its data.
        _skip(stream, info.size + _padded(info.size), buffer)


def scan(path: Path, limits: Limits = Limits()) -> list[MemberHeader]:
    """Pass one: every header checked (type, name, duplicates, caps) before any content is read."""
    seen: set[str] = set()
    total = 0
    headers: list[MemberHeader] = []
    try:
        with _open(path) as stream:
            for header in _headers(stream):
                why = check_name(header.name)
                if why:
                    raise UnsafeBundle(f"member {header.name!r} has {why}")
                if header.name in seen:
                    raise UnsafeBundle(f"member {header.name!r} appears twice")
                seen.add(header.name)
                total += header.size
                if total > limits.max_total_bytes:
                    raise UnsafeBundle(f"declared sizes exceed the cap of {limits.max_total_bytes} bytes "
                                       f"(at member {header.name!r}, declaring {header.size} bytes)")
                if len(seen) > limits.max_members:
                    raise UnsafeBundle(f"more than {limits.max_members} members")
                headers.append(header)
    except (OSError, EOFError, zlib.error) as exc:
        raise UnsafeBundle(f"not a readable gzip stream ({exc})") from exc
    return headers


def read_members(path: Path, keep: Callable[[str], bool], limits: Limits = Limits()) -> dict[str, Member]:
    """Pass two (after `scan` passed): hash every member, keeping the contents `keep` asks for."""
    headers = scan(path, limits)
    members: dict[str, Member] = {}
    buffer = bytearray(CHUNK)
    try:
        with _open(path) as stream:
            for header in headers:
                _read_exact(stream, BLOCK)  # the header block, already checked in pass one
                digest = hashlib.sha256()
                kept = bytearray() if keep(header.name) else None
                for chunk in _chunks(stream, header.size, buffer):
                    digest.update(chunk)
                    if kept is not None:
                        kept += chunk
                _skip(stream, _padded(header.size), buffer)
                members[header.name] = Member(header.name, header.size, digest.hexdigest(),
                                              bytes(kept) if kept is not None else None)
    except (OSError, EOFError, zlib.error) as exc:
        raise UnsafeBundle(f"not a readable gzip stream ({exc})") from exc
    return members


def read_all(path: Path, limits: Limits = Limits()) -> dict[str, bytes]:
    """Every member's content (for small bundles: report, diff)."""
    return {name: m.data or b"" for name, m in read_members(path, lambda _: True, limits).items()}
