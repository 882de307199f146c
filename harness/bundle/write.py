"""Deterministic tar.gz bytes, and putting them in place without ever leaving half a bundle.

Same files in, same bytes out: entries sorted by name, ustar headers with uid/gid 0, empty
owner names, mode 0644 and one fixed mtime; gzip header with mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path

from harness.errors import UsageError

FIXED_MTIME = 946684800  # 2000-01-01T00:00:00Z: the one mtime every member carries
FILE_MODE = 0o644
COMPRESS_LEVEL = 9


def archive_bytes(files: Mapping[str, bytes]) -> bytes:
    """The tar.gz of `files` (member name -> content), byte-identical for identical input."""
    tar_buffer = io.BytesIO()
    with tarfile.open(fileobj=tar_buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = FIXED_MTIME
            info.mode = FILE_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    # filename="" leaves FNAME out of the header; mtime=0 zeroes MTIME.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=COMPRESS_LEVEL) as gz:
        gz.write(tar_buffer.getvalue())
    return out.getvalue()


def write_atomically(data: bytes, destination: Path) -> Path:
    """Write to a hidden temporary name beside DESTINATION, fsync, then link it into place.

    An interrupt or crash before the link leaves no file under the final name (the temporary
    one is removed on any exception); an existing bundle is never overwritten.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        raise UsageError(f"{destination} already exists", hint="choose another --name")
    temporary = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        with open(temporary, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, destination)  # fails rather than overwrite
        except FileExistsError:
            raise UsageError(f"{destination} already exists", hint="choose another --name") from None
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
