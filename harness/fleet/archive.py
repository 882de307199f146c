"""The fleet bundle written as a stream: node bundles go from disk to the archive a chunk at a time.

The archive is the canonical bundle form of harness/bundle/write.py (same ustar headers, sorted
members, padding, end of archive, gzip header), so `harness.bundle.read` and tarfile read it
like any bundle; only memory differs: at a thousand nodes the node bundles are hundreds of MB and
are never held at once. Their bytes are already gzip-compressed, so they are stored in the
deflate stream as stored blocks rather than compressed again (compressing 100 MB of compressed
data at level 9 costs more than the whole collect and saves nothing); every other member is
compressed at level 9 as in a node bundle. The deflate stream is a sequence of segments, each
ended by a full flush, and the last by the finish: one gzip member, deterministic for the same
inputs. With no file member the bytes are exactly `archive_bytes` (tests/fleet/test_fleet_archive.py).

Each streamed member is hashed again as it is written and must have the sha256 the attestation
signs (the one taken when it was verified): a node bundle that changed since is refused, and the
fleet bundle is not written.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.bundle.write import COMPRESS_LEVEL, GZIP_HEADER, end_of_archive, padding, ustar_header, write_with

CHUNK = 1 << 20


class ChangedMember(Exception):
    """A streamed member's bytes are not the ones verified and signed."""


@dataclass(frozen=True)
class FileMember:
    """A member streamed from PATH, which must be SIZE bytes with this SHA256."""

    path: Path
    size: int
    sha256: str


class _Deflate:
    """A gzip member's deflate stream in segments, each at its own level; CRC-32 and size kept."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.level: int | None = None
        self.compressor: zlib._Compress | None = None  # typeshed's name for what compressobj returns
        self.crc, self.size = 0, 0
        out.write(GZIP_HEADER)

    def write(self, data: bytes, level: int) -> None:
        if level != self.level or self.compressor is None:  # (no compressor only before the first write)
            if self.compressor is not None:
                self.out.write(self.compressor.flush(zlib.Z_FULL_FLUSH))
            self.level = level
            self.compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
        self.out.write(self.compressor.compress(data))
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)

    def finish(self) -> None:
        if self.compressor is None:
            self.write(b"", COMPRESS_LEVEL)
        assert self.compressor is not None  # write() started one
        self.out.write(self.compressor.flush(zlib.Z_FINISH))
        self.out.write(struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


def _stream(deflate: _Deflate, name: str, member: FileMember) -> None:
    digest, size = hashlib.sha256(), 0
    with open(member.path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            size += len(chunk)
            if size > member.size:
                break
            digest.update(chunk)
            deflate.write(chunk, 0)
    if size != member.size or digest.hexdigest() != member.sha256:
        raise ChangedMember(
            f"{member.path} changed after it was verified (now {size} bytes, sha256 "
            f"{digest.hexdigest()[:16]}...): the fleet bundle was not written"
        )


def write_archive(out: BinaryIO, members: Mapping[str, bytes | FileMember]) -> None:
    """The canonical tar.gz of MEMBERS (name -> bytes, or a file streamed from disk) onto OUT."""
    deflate = _Deflate(out)
    length = 0
    for name in sorted(members):
        member = members[name]
        size = member.size if isinstance(member, FileMember) else len(member)
        deflate.write(ustar_header(name, size), COMPRESS_LEVEL)
        if isinstance(member, FileMember):
            _stream(deflate, name, member)
        else:
            deflate.write(member, COMPRESS_LEVEL)
        deflate.write(b"\0" * padding(size), COMPRESS_LEVEL)
        length += 512 + size + padding(size)
    deflate.write(b"\0" * end_of_archive(length), COMPRESS_LEVEL)
    deflate.finish()


def write_atomically(destination: Path, members: Mapping[str, bytes | FileMember]) -> Path:
    """Stream the archive to a hidden name beside DESTINATION, fsync, then link it into place:
    never half a bundle under the final name, never over an existing one."""
    return write_with(
        lambda handle: write_archive(handle, members), destination, hint="move it aside to collect the job again"
    )
