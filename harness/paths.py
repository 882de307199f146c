"""The paths a user names, checked before any work: inputs readable, outputs writable.

Every command calls these first, so a typo or a read-only folder is one line and exit 2 before
a probe runs, a key is made or a bundle is read, never a traceback after minutes of work. A
missing folder on an output's path is fine: the command creates it when it writes. The checks
use os.access, which answers for the real user (root may write where the mode bits say no).
"""

from __future__ import annotations

import os
import stat
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

# File systems the kernel makes up (proc(5), sysfs(5), ...): writing a bundle or a report there
# fails or, worse, writes a kernel setting. Refused up front, named by the type mountinfo gives.
PSEUDO_FILE_SYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "configfs",
        "pstore",
        "bpf",
        "efivarfs",
        "fusectl",
        "mqueue",
        "binfmt_misc",
        "autofs",
        "rpc_pipefs",
        "nsfs",
        "hugetlbfs",
    }
)
MOUNTINFO = Path("/proc/self/mountinfo")


def _mounts(mountinfo: Path = MOUNTINFO) -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount (proc(5) mountinfo); none when unreadable."""
    try:
        text = mountinfo.read_text()
    except OSError:
        return []
    mounts = []
    for line in text.splitlines():
        fields, _, after = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and after:
            point = parts[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            mounts.append((point, after.split()[0]))
    return mounts


def pseudo_file_system(path: Path, mountinfo: Path = MOUNTINFO) -> tuple[str, str] | None:
    """(file system type, mount point) when PATH (or where it would be made) is on a file system the
    kernel makes up; else None."""
    existing = Path(os.path.abspath(path))
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    real = os.path.realpath(existing)
    best: tuple[str, str] | None = None
    for point, kind in _mounts(mountinfo):
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[1])):
            best = (kind, point)
    return best if best is not None and best[0] in PSEUDO_FILE_SYSTEMS else None


def _stream(path: Path) -> bool:
    """PATH exists as a character device or a FIFO (e.g. /dev/stdout)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _not_pseudo(path: Path, label: str) -> None:
    found = pseudo_file_system(path)
    if found:
        raise UsageError(
            f"{label}: {found[1]} is a {found[0]} file system (the kernel's own files), not a place for output",
            hint="choose a folder on a disk",
        )


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
    if not _stream(path):  # /dev/stdout, /dev/null, a named pipe: written as a stream, wherever they live
        _not_pseudo(path, label)
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
    """PATH is a folder files can be created in, or one that can be made (not on /proc, /sys ...)."""
    label = _label(option, path)
    _not_pseudo(path, label)
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


MAX_INPUT_BYTES = 256 * 2**20  # a statement, a profile, a node's log or record read whole: never more


class NotARegularFile(UsageError):
    """An input that is not a regular file (a symbolic link where none is followed, a FIFO, a device, a
    folder) or is larger than its cap: refused unread."""


def read_regular(path: Path, what: str, limit: int = MAX_INPUT_BYTES, follow_links: bool = True) -> bytes:
    """PATH's bytes, only if it is a regular file of at most LIMIT bytes: opened without blocking (a FIFO
    never waits for a writer), without following a symbolic link unless FOLLOW_LINKS, then checked by
    fstat on what was opened (no race with a rename); NotARegularFile (exit 2) naming what it is otherwise."""
    label = _label(what, path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UsageError(f"{label}: no such file") from None
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise NotARegularFile(f"{label}: is a symbolic link, not a file (links are not followed here)") from None
        raise UsageError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            kind = "a folder" if stat.S_ISDIR(mode.st_mode) else "a FIFO" if stat.S_ISFIFO(mode.st_mode) else "a device"
            raise NotARegularFile(f"{label}: is {kind}, not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(f"{label}: larger than the {limit / 2**20:g} MiB read from such a file")
    return data


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
