"""Reading a bundle without extracting it, checking every header before reading any content.

The reader accepts exactly what the writer (harness/bundle/write.py) makes: one gzip member with
the canonical header and nothing after it, holding the canonical ustar archive of regular files:
each header block byte-identical to the writer's header for its (name, size), members in sorted
order, zero padding, then exactly the end-of-archive blocks and record padding. The deflate bytes
themselves are not compared (zlib builds differ between hosts); the decompressed tar is.

Pass one walks the headers (parsed by `tarfile.TarInfo.frombuf` to name what is wrong: links,
devices, directories, pax or GNU records, absolute or `..` names, duplicates, declared sizes over
the caps) and skips member data in bounded chunks. Only when every header passes does pass two
read the contents, hashing each member in chunks and holding in memory only the members the
caller asks to keep, each under a cap. Nothing is ever held whole except those kept members.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.bundle.canonical import gzip_header_difference, tar_header_difference
from harness.bundle.write import BLOCK, GZIP_HEADER, end_of_archive, padding, ustar_header

CHUNK = 1 << 20
ZERO_BLOCK = b"\0" * BLOCK
DEFAULT_MAX_TOTAL_BYTES = 1 << 30  # 1 GiB of declared content
DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_KEPT_MEMBER_BYTES = 64 << 20  # a member read into memory (JSON, Markdown): 64 MiB at most
DEFAULT_MAX_KEPT_TOTAL_BYTES = 256 << 20  # all of them together: 256 MiB at most
REGULAR_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
TYPE_NAMES = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.DIRTYPE: "a directory",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.XHDTYPE: "a pax extended header",
    tarfile.XGLTYPE: "a pax global header",
    tarfile.GNUTYPE_LONGNAME: "a GNU long name",
    tarfile.GNUTYPE_LONGLINK: "a GNU long link",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}


class UnsafeBundle(Exception):
    """The archive breaks the bundle format; nothing was extracted and no content was read."""


class UnreadableBundle(UnsafeBundle):
    """The file exists but cannot be read (a directory, no permission, an I/O error)."""


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
    max_kept_member_bytes: int = DEFAULT_MAX_KEPT_MEMBER_BYTES
    max_kept_total_bytes: int = DEFAULT_MAX_KEPT_TOTAL_BYTES


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


class GzipMember:
    """The decompressed bytes of a file that must be one canonical gzip member and nothing more.

    zlib checks the member's CRC-32 and length trailer; `finish` refuses anything after it.
    """

    def __init__(self, handle: BinaryIO) -> None:
        header = handle.read(len(GZIP_HEADER))
        why = gzip_header_difference(header)
        if why:
            raise UnsafeBundle(why)
        self._handle = handle
        self._inflate = zlib.decompressobj(wbits=31)  # gzip framing: header, deflate, CRC-32, ISIZE
        self._pending = header

    def read(self, limit: int) -> bytes:
        """Up to LIMIT decompressed bytes; b"" only at the end of the gzip member."""
        try:
            while not self._inflate.eof:
                if not self._pending:
                    self._pending = self._handle.read(CHUNK)
                    if not self._pending:
                        raise UnsafeBundle("the gzip stream is truncated (the file ends before the stream does)")
                out = self._inflate.decompress(self._pending, limit)
                self._pending = self._inflate.unconsumed_tail
                if out:
                    return out
        except zlib.error as exc:
            raise UnsafeBundle(f"not a readable gzip stream ({exc})") from exc
        return b""

    def finish(self) -> None:
        """Refuse any byte after the canonical end of the tar, or after the gzip member."""
        if self.read(1):
            raise UnsafeBundle("data after the end-of-archive record padding")
        # At the member's end zlib moves what follows into unused_data (unconsumed_tail may repeat it).
        trailing = self._inflate.unused_data + self._handle.read(CHUNK)
        if trailing.startswith(GZIP_HEADER[:2]):
            raise UnsafeBundle("a second gzip member after the first (a bundle is exactly one)")
        if trailing:
            raise UnsafeBundle(
                f"{len(trailing)}{'+' if len(trailing) >= CHUNK else ''} trailing bytes after the gzip stream"
            )


def _read_exact(stream: GzipMember, size: int) -> bytes:
    data = stream.read(size)
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            raise UnsafeBundle("the archive ends in the middle of a record (truncated)")
        data += more
    return data


def _chunks(stream: GzipMember, size: int) -> Iterator[bytes]:
    """SIZE bytes of STREAM in chunks of at most CHUNK bytes."""
    while size > 0:
        chunk = stream.read(min(size, CHUNK))
        if not chunk:
            raise UnsafeBundle("the archive ends in the middle of a record (truncated)")
        size -= len(chunk)
        yield chunk


def _expect_zeros(stream: GzipMember, size: int, where: str) -> None:
    for chunk in _chunks(stream, size):
        if chunk.count(0) != len(chunk):
            raise UnsafeBundle(f"non-zero bytes {where}")


def _parsed(block: bytes) -> MemberHeader:
    """The member a header block describes, refused when it is not a safe regular file."""
    try:
        info = tarfile.TarInfo.frombuf(block, "utf-8", "strict")
    except (tarfile.HeaderError, UnicodeDecodeError) as exc:
        raise UnsafeBundle(f"a malformed tar header ({exc})") from exc
    if info.type not in REGULAR_TYPES:
        kind = TYPE_NAMES.get(info.type, f"tar type {info.type!r}")
        raise UnsafeBundle(f"member {info.name!r} is {kind}; a bundle holds regular files only")
    if info.size < 0:
        raise UnsafeBundle(f"member {info.name!r} declares a negative size")
    why = check_name(info.name)
    if why:
        raise UnsafeBundle(f"member {info.name!r} has {why}")
    return MemberHeader(info.name, info.size)


@dataclass
class _Tally:
    """What the headers so far add up to, against the limits."""

    limits: Limits
    keep: Callable[[str], bool]
    names: set[str] = dataclasses.field(default_factory=set)
    previous: str = ""
    total: int = 0
    kept: int = 0

    def add(self, header: MemberHeader) -> None:
        name, size, limits = header.name, header.size, self.limits
        if name in self.names:
            raise UnsafeBundle(f"member {name!r} appears twice")
        if name < self.previous:
            raise UnsafeBundle(
                f"member {name!r} is out of order (after {self.previous!r}); a bundle's members are sorted by name"
            )
        self.names.add(name)
        self.previous = name
        self.total += size
        if self.total > limits.max_total_bytes:
            raise UnsafeBundle(
                f"declared sizes exceed the cap of {limits.max_total_bytes} bytes "
                f"(at member {name!r}, declaring {size} bytes)"
            )
        if len(self.names) > limits.max_members:
            raise UnsafeBundle(f"more than {limits.max_members} members")
        if self.keep(name):
            self.kept += size
            if size > limits.max_kept_member_bytes:
                raise UnsafeBundle(
                    f"member {name!r} declares {size} bytes; a member read into memory is "
                    f"capped at {limits.max_kept_member_bytes} bytes"
                )
            if self.kept > limits.max_kept_total_bytes:
                raise UnsafeBundle(
                    f"members read into memory exceed the cap of {limits.max_kept_total_bytes} "
                    f"bytes (at member {name!r})"
                )


def _members(stream: GzipMember, limits: Limits, keep: Callable[[str], bool]) -> Iterator[MemberHeader]:
    """Each member's header, checked, in order; then the canonical end, checked.

    The caller reads exactly `size` data bytes of each member from STREAM before asking for the
    next; this generator checks the padding after them, and after the last member the
    end-of-archive blocks, the record padding and that nothing follows.
    """
    tally = _Tally(limits, keep)
    length = 0
    while True:
        block = _read_exact(stream, BLOCK)
        if block == ZERO_BLOCK:
            break
        header = _parsed(block)
        tally.add(header)
        try:
            canonical = ustar_header(header.name, header.size)
        except ValueError as exc:
            raise UnsafeBundle(f"member {header.name!r}: {exc}") from exc
        if block != canonical:
            raise UnsafeBundle(
                f"member {header.name!r} has a non-canonical header: {tar_header_difference(block, canonical)}"
            )
        yield header
        _expect_zeros(stream, padding(header.size), f"in the padding after member {header.name!r}")
        length += BLOCK + header.size + padding(header.size)
    _expect_zeros(stream, end_of_archive(length) - BLOCK, "after the end-of-archive marker (hidden data)")
    stream.finish()


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[GzipMember]:
    """PATH as a canonical gzip member; a missing file raises FileNotFoundError, any other OS error
    UnreadableBundle."""
    try:
        with open(path, "rb") as handle:
            yield GzipMember(handle)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableBundle(f"cannot read {path}: {exc.strerror or exc}") from exc


def scan(path: Path, limits: Limits = Limits(), keep: Callable[[str], bool] = lambda _: False) -> list[MemberHeader]:
    """Pass one: every header and the canonical form checked before any content is read."""
    headers = []
    with _opened(path) as stream:
        for header in _members(stream, limits, keep):
            for _ in _chunks(stream, header.size):
                pass
            headers.append(header)
    return headers


def _read(stream: GzipMember, header: MemberHeader, keep: bool) -> Member:
    digest = hashlib.sha256()
    kept: list[bytes] | None = [] if keep else None
    for chunk in _chunks(stream, header.size):
        digest.update(chunk)
        if kept is not None:
            kept.append(chunk)
    return Member(header.name, header.size, digest.hexdigest(), b"".join(kept) if kept is not None else None)


def read_members(path: Path, keep: Callable[[str], bool], limits: Limits = Limits()) -> dict[str, Member]:
    """Pass two (after `scan` passed): hash every member, keeping the contents `keep` asks for.

    Pass two checks everything pass one did, so a file changed between the passes is refused too.
    """
    expected = scan(path, limits, keep)
    members: dict[str, Member] = {}
    with _opened(path) as stream:
        for header in _members(stream, limits, keep):
            members[header.name] = _read(stream, header, keep(header.name))
    if [MemberHeader(m.name, m.size) for m in members.values()] != expected:
        raise UnsafeBundle("the file changed while it was read")
    return members


def read_all(path: Path, limits: Limits = Limits()) -> dict[str, bytes]:
    """Every member's content (for small bundles: report, diff); each member under the total cap."""
    limits = dataclasses.replace(
        limits, max_kept_member_bytes=limits.max_total_bytes, max_kept_total_bytes=limits.max_total_bytes
    )
    return {name: m.data or b"" for name, m in read_members(path, lambda _: True, limits).items()}
