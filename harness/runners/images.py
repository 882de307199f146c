"""The pinned probe images: which image name runs as which `repository@sha256:...`.

Two lock files under images/, both `{"NAME": "REPOSITORY@sha256:DIGEST"}`:

- `images/lock.json` is committed: images published to a registry (e.g. `cuda`), whose digest
  every colleague must get.
- `images/lock.local.json` is git-ignored and written by `make images` (images/build-cpu.sh):
  images built on this machine and pushed to its loopback registry. Its entries count only for
  the names in LOCALLY_BUILT, so a local file can never redirect a published image.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import EnvironmentProblem

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCK = PROJECT_ROOT / "images" / "lock.json"
LOCAL_LOCK = PROJECT_ROOT / "images" / "lock.local.json"
LOCALLY_BUILT = frozenset({"cpu"})  # what `make images` builds on any machine, no registry needed

_REF = re.compile(r"^(?P<repository>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})$")


class LockError(EnvironmentProblem):
    """A lock file that cannot be trusted as written."""


class ImageNotLocked(EnvironmentProblem):
    """No lock entry for the image asked for."""


@dataclass(frozen=True)
class PinnedImage:
    """One lock entry: the image name, its pinned reference and the file that pinned it."""

    name: str
    ref: str  # repository@sha256:<64 hex>
    source: Path

    @property
    def repository(self) -> str:
        return self.ref.split("@", 1)[0]

    @property
    def digest(self) -> str:
        return self.ref.split("@", 1)[1]


def parse_ref(ref: str, where: str = "lock") -> tuple[str, str]:
    """(repository, digest) of `repository@sha256:<64 hex>`; anything else is a LockError."""
    match = _REF.match(ref) if isinstance(ref, str) else None
    if match is None:
        raise LockError(
            f"{where}: {ref!r} is not REPOSITORY@sha256:<64 hex digits>",
            hint="a lock entry pins an image by its registry digest, never by a tag",
        )
    return match["repository"], match["digest"]


def _read(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise LockError(
            f"{path} is not JSON: {exc.msg} at line {exc.lineno}",
            hint="fix or delete it (make images rewrites images/lock.local.json)",
        ) from exc
    if not isinstance(entries, dict):
        raise LockError(f"{path} must map image names to REPOSITORY@sha256:... references")
    for name, ref in entries.items():
        parse_ref(ref, where=f"{path} entry {name!r}")
    return entries


def load(lock: Path | None = None, local_lock: Path | None = None) -> dict[str, PinnedImage]:
    """Every pinned image: the committed lock, with local builds on top for LOCALLY_BUILT names."""
    lock, local_lock = lock or LOCK, local_lock or LOCAL_LOCK
    images = {name: PinnedImage(name, ref, lock) for name, ref in _read(lock).items()}
    for name, ref in _read(local_lock).items():
        if name not in LOCALLY_BUILT:
            raise LockError(
                f"{local_lock} pins {name!r}, which is not built locally",
                hint=f"only {', '.join(sorted(LOCALLY_BUILT))} may be pinned there; "
                f"published images are pinned in {lock}",
            )
        images[name] = PinnedImage(name, ref, local_lock)
    return images


def pinned(name: str, lock: Path | None = None, local_lock: Path | None = None) -> PinnedImage:
    """The lock entry for `name`, or ImageNotLocked with what to do about it."""
    images = load(lock, local_lock)
    if name in images:
        return images[name]
    if name in LOCALLY_BUILT:
        hint = "run `make images` (it builds the image and writes images/lock.local.json)"
    else:
        hint = f"build and push it from images/{name}/ and pin its digest in images/lock.json (docs/docker.md says how)"
    known = f"pinned: {', '.join(sorted(images))}" if images else "no image is pinned here yet"
    raise ImageNotLocked(f"no pinned image {name!r} ({known})", hint=hint)
