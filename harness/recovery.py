"""Where measured results go when their destination cannot be written: nothing measured is lost.

A fresh folder RECOVERY_ROOT/NAME-UTCSTAMP-XXXX/ (mode 0700) with the files and a README.txt
saying what happened and what each file is. RECOVERY_ROOT is CACHE_ROOT/recovery (CACHE_ROOT as
the checkpoint cache: $DOSSIER_CACHE_DIR, $XDG_CACHE_HOME/rig-dossier, ~/.cache/rig-dossier),
else the system's temporary folder when that cannot be written either.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from harness.errors import EnvironmentProblem
from harness.paths import cache_root


def recovery_roots() -> list[Path]:
    return [cache_root() / "recovery", Path(tempfile.gettempdir()) / "rig-dossier-recovery"]


def _safe_member(name: str) -> str:
    """A relative name inside the folder (member names are the harness's own; never trust one)."""
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".", "..", "/")]
    return "/".join(parts) or "unnamed"


def _write_file(target: Path, data: bytes) -> None:
    """DATA at TARGET whole or not at all: written beside it, flushed to the disk, then renamed (a full
    disk leaves no 0-byte or half file under the name)."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _write_into(root: Path, name: str, files: Mapping[str, bytes], readme: str) -> Path:
    """A fresh folder under ROOT with FILES and README.txt, every file whole; a folder that could not be
    written whole (a full disk) is removed, so what is left is always what it says."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-{stamp}-", dir=root))
    try:
        for member, data in files.items():
            target = folder / _safe_member(member)
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_file(target, data)
        _write_file(folder / "README.txt", readme.encode())
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def keep(name: str, files: Mapping[str, bytes], why: str, what: str = "") -> Path:
    """FILES (relative name -> bytes) in a fresh recovery folder; returns the folder.

    WHY says what could not be written; WHAT describes the files (a line each, for README.txt)."""
    readme = (
        f"Rig Dossier kept these files here because: {why}\n"
        f"Nothing in them was changed; move them where you need them.\n" + (what and what + "\n")
    )
    errors = []
    for root in recovery_roots():
        try:
            return _write_into(root, name, files, readme)
        except OSError as exc:
            errors.append(f"{root}: {exc.strerror or exc}")
    raise EnvironmentProblem(f"{why}; and the results could not be kept anywhere else either: " + "; ".join(errors))
