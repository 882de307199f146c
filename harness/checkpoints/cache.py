"""The content-addressed blob cache: ROOT/blobs/sha256/<hex>, one file per content.

ROOT is, in order: the --cache-dir option, $DOSSIER_CACHE_DIR, $XDG_CACHE_HOME/rig-dossier,
~/.cache/rig-dossier. A blob is only ever trusted after hashing it again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from harness.paths import CACHE_ENV_VAR, cache_root

ENV_VAR = CACHE_ENV_VAR
default_root = cache_root


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class BlobCache:
    """Files by sha256 under one root directory."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_root()

    def path_for(self, sha256: str) -> Path:
        return self.root / "blobs" / "sha256" / sha256

    def scratch(self) -> Path:
        """A fresh directory on the cache's file system, for downloads not yet verified."""
        base = self.root / "tmp"
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=base))

    def put(self, source: Path, sha256: str, move: bool = False) -> Path:
        """Store a file already verified to hash to `sha256`; returns the blob path.

        Moves it when asked (a download in scratch), else hard-links it, or copies it when
        a link is impossible; the copy is written beside the blob and renamed into place
        so a reader never sees half a blob.
        """
        blob = self.path_for(sha256)
        if blob.exists() and sha256_file(blob) == sha256:
            return blob
        blob.parent.mkdir(parents=True, exist_ok=True)
        if move:
            os.replace(source, blob)
            return blob
        partial = blob.with_name(f".{sha256}.{os.getpid()}.partial")
        try:
            try:
                os.link(source, partial)
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(source, partial)
            os.replace(partial, blob)
        finally:
            partial.unlink(missing_ok=True)
        return blob
