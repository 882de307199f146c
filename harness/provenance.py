"""Facts about the tool and the host a dossier records (tool.json-like parts of commands.json
and environment.json). Each fact is a value or {"unavailable": reason}."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import __version__
from harness.environment import recorded_environment
from harness.probes._contract import attempt, unavailable

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HOST_PACKAGES = ("torch", "nvidia-ml-py", "jsonschema", "cryptography", "jinja2", "docker",
                 "huggingface-hub", "safetensors", "matplotlib", "rich")


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True,
                          timeout=20)
    if done.returncode != 0:
        first_line = (done.stderr.strip().splitlines() or [""])[0]  # git's hint lines add nothing
        raise RuntimeError(f"git {' '.join(args)}: {first_line or f'exited {done.returncode}'}")
    return done.stdout.strip()


def tool_info() -> dict[str, Any]:
    """The harness's name, version and the git commit of its source (dirty when edited)."""
    commit = attempt(_git, "rev-parse", "HEAD")
    status = attempt(_git, "status", "--porcelain", "--untracked-files=no")
    return {
        "name": "rig-dossier",
        "version": __version__,
        "git_commit": commit,
        "git_dirty": (bool(status) if isinstance(status, str) else status),
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
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "packages": {name: _package_version(name) for name in HOST_PACKAGES},
        "environment": recorded_environment(),
    }
