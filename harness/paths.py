"""The paths a user names, checked before any work: inputs readable, outputs writable.

Every command calls these first, so a typo or a read-only folder is one line and exit 2 before
a probe runs, a key is made or a bundle is read, never a traceback after minutes of work. A
missing folder on an output's path is fine: the command creates it when it writes. The checks
use os.access, which answers for the real user (root may write where the mode bits say no).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from harness.errors import EnvironmentProblem, UsageError

CACHE_ENV_VAR = "DOSSIER_CACHE_DIR"


def cache_root() -> Path:
    """Where rig-dossier keeps what it fetches or must not lose: $DOSSIER_CACHE_DIR, else
    $XDG_CACHE_HOME/rig-dossier, else ~/.cache/rig-dossier (the checkpoint blobs, the recovery folders)."""
    if os.environ.get(CACHE_ENV_VAR):
        return Path(os.environ[CACHE_ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "rig-dossier"

GZIP_MAGIC = b"\x1f\x8b"


def _label(option: str, path: Path) -> str:
    return f"{option} {path}" if option else str(path)


def _creatable_below(folder: Path, label: str) -> None:
    """FOLDER exists as a writable folder, or can be made under its nearest existing ancestor."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        raise UsageError(f"{label}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{label}: {existing} is not writable (permissions, or a read-only file system)")


def output_file(path: Path, option: str, inputs: Iterable[Path] = ()) -> Path:
    """PATH can be written as a file (replaced if it exists); it is none of INPUTS."""
    label = _label(option, path)
    if os.path.isdir(path):
        raise UsageError(f"{label}: is a folder; give a file name")
    if os.path.lexists(path):
        if not os.access(path, os.W_OK):
            raise UsageError(f"{label}: not writable (permissions, or a read-only file system)")
        for source in inputs:
            if os.path.exists(source) and os.path.samefile(source, path):
                raise UsageError(f"{label}: is the input {source}; it would be overwritten")
    else:
        _creatable_below(path.parent, label)
    return path


def output_files(named: Iterable[tuple[str, Path | None]], inputs: Iterable[Path] = ()) -> None:
    """Each (option, path) given is writable, and no two options name the same file."""
    given = [(option, path) for option, path in named if path is not None]
    inputs = list(inputs)
    seen: dict[str, str] = {}
    for option, path in given:
        output_file(path, option, inputs)
        key = os.path.abspath(path)
        if key in seen:
            raise UsageError(f"{option} {path}: the same file as {seen[key]}")
        seen[key] = option


def output_dir(path: Path, option: str) -> Path:
    """PATH is a folder files can be created in, or one that can be made."""
    label = _label(option, path)
    if os.path.lexists(path):
        if not os.path.isdir(path):
            raise UsageError(f"{label}: is not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{label}: not writable (permissions, or a read-only file system)")
    else:
        _creatable_below(path.parent, label)
    return path


def input_file(path: Path, what: str, head: int = 0) -> bytes:
    """PATH opens for reading as a file; returns its first HEAD bytes."""
    label = _label(what, path)
    try:
        with open(path, "rb") as handle:
            return handle.read(head) if head else b""
    except FileNotFoundError:
        raise UsageError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{label}: is a folder, not a file") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot be read ({exc.strerror or exc})") from None


def input_bundle(path: Path, what: str = "bundle") -> Path:
    """PATH is a readable file that starts like a bundle (gzip); verification does the rest."""
    if input_file(path, what, head=len(GZIP_MAGIC)) != GZIP_MAGIC:
        raise UsageError(f"{_label(what, path)}: not a dossier bundle (not a gzip file)")
    return path


def input_dir(path: Path, what: str) -> Path:
    """PATH is a folder that can be listed."""
    label = _label(what, path)
    if not os.path.isdir(path):
        raise UsageError(f"{label}: " + ("is not a folder" if os.path.lexists(path) else "no such folder"))
    if not os.access(path, os.R_OK | os.X_OK):
        raise UsageError(f"{label}: cannot be read (permission denied)")
    return path


def write_output(path: Path, data: bytes | str, option: str) -> Path:
    """Write DATA to PATH (making missing folders); a failure now (disk full, permissions changed
    since the check) is one line, exit 4."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {_label(option, path)}: {exc.strerror or exc}") from exc
    return path
