"""Facts about the tool and the host a dossier records (tool.json-like parts of commands.json
and environment.json). Each fact is a value or {"unavailable": reason}."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import __version__
from harness.probes.contract import attempt, unavailable
from harness.runners.environment import recorded_environment

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SOURCE_PATTERNS = ("harness/**/*.py", "harness/**/templates/*", "harness/data/**/*.json", "schemas/*.json")
SOURCE_FOLDERS = ("harness", "schemas")  # where every SOURCE_PATTERNS file lies
HOST_PACKAGES = (
    "torch",
    "nvidia-ml-py",
    "jsonschema",
    "cryptography",
    "jinja2",
    "docker",
    "huggingface-hub",
    "safetensors",
    "matplotlib",
    "rich",
)


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        first_line = (done.stderr.strip().splitlines() or [""])[0]  # git's hint lines add nothing
        raise RuntimeError(f"git {' '.join(args)}: {first_line or f'exited {done.returncode}'}")
    return done.stdout.strip()


def _tracked_commit() -> tuple[str, bool]:
    """(HEAD, whether the harness files differ from it) when every harness source file is tracked
    at HEAD by the repository that holds PROJECT_ROOT (its own, or a larger one it is part of);
    RuntimeError saying why not otherwise. A copy lying untracked inside another repository never
    records that repository's commit."""
    files = [p.relative_to(PROJECT_ROOT).as_posix() for p in source_files()]
    tracked = set(_git("ls-files", "--full-name", "--", *SOURCE_FOLDERS).splitlines())
    prefix = _git("rev-parse", "--show-prefix")
    missing = [f for f in files if prefix + f not in tracked]
    if missing:
        raise RuntimeError(
            f"{len(missing)} of the {len(files)} harness files are not tracked by the git "
            f"repository holding them (e.g. {missing[0]})"
        )
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", *SOURCE_FOLDERS)
    return _git("rev-parse", "HEAD"), bool(dirty)


def source_files(root: Path = PROJECT_ROOT) -> list[Path]:
    """The files that make up the harness: its package (code, templates, data) and the schemas."""
    found = [
        p for pattern in SOURCE_PATTERNS for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts
    ]
    return sorted(set(found), key=lambda p: p.relative_to(root).as_posix())


def source_sha256(root: Path = PROJECT_ROOT) -> str:
    """sha256 over 'relative path NUL sha256(content) LF' of every source file, in path order:
    the same harness gives the same digest wherever it lies, with or without git."""
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(
            f"{path.relative_to(root).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode()
        )
    return digest.hexdigest()


def tool_info() -> dict[str, Any]:
    """The harness's name, version, the content hash of its own files (what identifies it), and the
    git commit of its source (dirty when its files were edited) only when those files are tracked
    at that commit; else why not."""
    tracked = attempt(_tracked_commit)
    commit, dirty = tracked if isinstance(tracked, tuple) else (tracked, tracked)
    return {
        "name": "rig-dossier",
        "version": __version__,
        "source_sha256": attempt(source_sha256),
        "git_commit": commit,
        "git_dirty": dirty,
    }


def _package_version(name: str) -> Any:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return unavailable(f"{name} is not installed in the host's Python")


def _memory_total_mib() -> Any:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no MemTotal line in /proc/meminfo")


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    raise RuntimeError("no 'model name' line in /proc/cpuinfo")


def host_environment() -> dict[str, Any]:
    """The host side of environment.json (the device side is in raw/health.json)."""
    uname = platform.uname()
    return {
        "hostname": attempt(socket.gethostname),
        "os": f"{uname.system} {uname.release}",
        "kernel_version": uname.version,
        "machine": uname.machine,
        "cpu_model": attempt(_cpu_model),
        "cpu_count": os.cpu_count() or unavailable("os.cpu_count() returned None"),
        "memory_total_mib": attempt(_memory_total_mib),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": {name: _package_version(name) for name in HOST_PACKAGES},
        "environment": recorded_environment(),
    }
