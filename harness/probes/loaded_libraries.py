"""Which file the dynamic loader actually mapped for a library, and loading one where torch would.

Standard library only (ctypes, importlib.util, /proc/self/maps); nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path
from typing import Any

from harness.probes.contract import unavailable

MAPS = Path("/proc/self/maps")


def mapped_file(prefix: str, maps: Path = MAPS) -> str | None:
    """The file mapped into this process whose name starts with `prefix` ('libnccl.so'), or None.

    The maps file names the file after symlinks and the loader's search: the file whose code runs.
    """
    try:
        lines = maps.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and os.path.basename(fields[5]).startswith(prefix):
            return fields[5]
    return None


def loaded_path(prefix: str, asked: str) -> str:
    """The file mapped for a library just dlopened as `asked`; `asked` itself where /proc is absent."""
    return mapped_file(prefix) or asked


def package_lib_dirs(package: str) -> list[Path]:
    """`package`'s lib/ folders ('nvidia.nccl' -> .../site-packages/nvidia/nccl/lib), found
    without importing the package itself (only its namespace parent `nvidia`, which has no code)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) / "lib" for p in spec.submodule_search_locations if (Path(p) / "lib").is_dir()]


def namespace_lib_dirs(namespace: str) -> list[Path]:
    """Every `namespace/*/lib` folder ('nvidia' -> nvidia/cudnn/lib, nvidia/cu13/lib, ...)."""
    try:
        spec = importlib.util.find_spec(namespace)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [d for p in spec.submodule_search_locations for d in sorted(Path(p).glob("*/lib")) if d.is_dir()]


def open_library(
    soname: str, packages: tuple[str, ...], extra_dirs: tuple[Path, ...] = ()
) -> tuple[Any, str] | tuple[None, dict[str, str]]:
    """dlopen `soname` where torch's loader would find it: the pip packages torch depends on
    (their lib/ folders, as torch's RPATH and preload name them), then `extra_dirs` (torch/lib),
    then any other lib/ of those packages' namespace (nvidia/*/lib: the CUDA 13 wheels'
    nvidia/cu13/lib), then by name through the loader's search path.
    (library, file loaded) or (None, why not)."""
    tried = []
    folders = [d for package in packages for d in package_lib_dirs(package)] + list(extra_dirs)
    for namespace in dict.fromkeys(p.split(".")[0] for p in packages if "." in p):
        folders += [d for d in namespace_lib_dirs(namespace) if d not in folders]
    for folder in folders:
        candidate = folder / soname
        if not candidate.exists():
            continue
        try:
            return ctypes.CDLL(str(candidate)), str(candidate)  # opened by path: that file
        except OSError as exc:
            tried.append(str(exc))
    try:
        # by name: the maps file says which file the loader's search found
        return ctypes.CDLL(soname), loaded_path(soname.split(".so")[0] + ".so", soname)
    except OSError as exc:
        tried.append(str(exc))
    searched = ", ".join(packages) or "no package"
    return None, unavailable(
        f"{soname} not loadable (searched the {searched} package lib folders, "
        f"torch/lib, the other lib folders of that namespace, then the loader's "
        f"path): {'; '.join(tried)}"
    )
