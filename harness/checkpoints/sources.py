"""Where a pinned checkpoint file can come from, in the order the fetcher asks.

Each source offers candidate files; it never decides whether one is right: the fetcher
hashes every candidate. `strict` sources raise on a mismatch (the user named that file, or
the Hub sent those bytes for a pinned revision); the others note the refusal and let the
next source try.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from harness.checkpoints.cache import BlobCache


@dataclass(frozen=True)
class Wanted:
    """The file to find: its name, whole-file sha256 and, where known, where it is published."""

    file: str
    sha256: str
    repo_id: str | None = None
    revision: str | None = None
    size_bytes: int | None = None
    packages: tuple[str, ...] = ()


@dataclass
class Candidate:
    """A file a source offers, and what to do with it after hashing."""

    path: Path
    description: str
    move_into_cache: bool = False  # a verified download in scratch: move, don't copy
    remove_on_mismatch: bool = False  # a corrupt cache blob: delete it
    cleanup: Callable[[], None] = field(default=lambda: None)


class SourceUnavailable(Exception):
    """This source cannot be asked here (offline, not installed); the message says why."""


class Source(Protocol):
    """Where the pinned file may be: its candidates, and whether a candidate that fails the check ends the
    search (strict) or the next source is asked."""

    name: str
    strict: bool

    def candidates(self, wanted: Wanted) -> list[Candidate]: ...


class CacheSource:
    name = "cache"
    strict = False

    def __init__(self, cache: BlobCache) -> None:
        self.cache = cache

    def candidates(self, wanted: Wanted) -> list[Candidate]:
        blob = self.cache.path_for(wanted.sha256)
        if not blob.is_file():
            raise SourceUnavailable(f"no blob {blob}")
        return [Candidate(blob, f"cache blob {blob}", remove_on_mismatch=True)]


class LocalPathSource:
    """A file the user names, or a folder holding the wanted file name."""

    name = "local path"
    strict = True

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def candidates(self, wanted: Wanted) -> list[Candidate]:
        if self.path is None:
            raise SourceUnavailable("none named (--checkpoint PATH)")
        return [Candidate(found, f"local file {found}") for found in local_files(self.path, wanted.file)]


def local_files(path: Path, file: str) -> list[Path]:
    """`path` itself, or `path/file`, or the files called `file` below the folder `path`."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SourceUnavailable(f"{path} does not exist")
    direct = path / file
    if direct.is_file():
        return [direct]
    found = sorted(p for p in path.rglob(file) if p.is_file())
    if not found:
        raise SourceUnavailable(f"no file named {file} in {path}")
    return found


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class InstalledPackageSource:
    """Files of that name carried by any installed Python distribution (from its RECORD)."""

    name = "installed package"
    strict = False

    def candidates(self, wanted: Wanted) -> list[Candidate]:
        preferred = {_normalized(p) for p in wanted.packages}
        found, seen = [], set()
        for dist in importlib.metadata.distributions():
            # an email.message.Message at run time (typeshed's protocol omits .get); [] would warn or raise on 3.12+
            dist_name = dist.metadata.get("Name") or "?"  # type: ignore[attr-defined]  # see the line above
            key = _normalized(dist_name)
            if key in seen:
                continue
            seen.add(key)
            for entry in dist.files or ():
                if PurePosixPath(str(entry)).name != wanted.file:
                    continue
                path = Path(str(dist.locate_file(entry)))
                if path.is_file():
                    found.append(
                        (
                            key not in preferred,
                            str(path),
                            Candidate(path, f"installed package {dist_name} {dist.version}: {path}"),
                        )
                    )
        if not found:
            raise SourceUnavailable(f"no installed distribution carries a file named {wanted.file}")
        return [c for _, _, c in sorted(found, key=lambda t: t[:2])]


def hub_offline(offline: bool | None) -> bool:
    """--offline, or HF_HUB_OFFLINE set the way huggingface_hub reads it."""
    if offline is not None:
        return offline
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}


class HubSource:
    """The Hugging Face cache, then hf_hub_download pinned to the revision (into scratch)."""

    name = "hub"
    strict = True

    def __init__(self, cache: BlobCache, offline: bool) -> None:
        self.cache = cache
        self.offline = offline

    def candidates(self, wanted: Wanted) -> list[Candidate]:
        if wanted.repo_id is None or wanted.revision is None:
            raise SourceUnavailable("no repository and revision to download from")
        import huggingface_hub  # host only; imported here so the rest works without it

        cached = huggingface_hub.try_to_load_from_cache(wanted.repo_id, wanted.file, revision=wanted.revision)
        if isinstance(cached, str) and Path(cached).is_file():
            return [Candidate(Path(cached), f"huggingface cache {cached}")]
        if self.offline:
            raise SourceUnavailable(
                "skipped: offline (--offline or HF_HUB_OFFLINE=1), and not in the huggingface cache"
            )
        scratch = self.cache.scratch()
        try:
            path = huggingface_hub.hf_hub_download(
                wanted.repo_id, wanted.file, revision=wanted.revision, local_dir=scratch
            )
        except Exception as exc:  # no network, no repo, no revision: all reported
            shutil.rmtree(scratch, ignore_errors=True)
            raise SourceUnavailable(
                f"hf_hub_download failed: {type(exc).__name__}: "
                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            ) from exc
        return [
            Candidate(
                Path(path),
                f"hf_hub_download {wanted.repo_id}@{wanted.revision} {wanted.file}",
                move_into_cache=True,
                cleanup=lambda: shutil.rmtree(scratch, ignore_errors=True),
            )
        ]
