"""torch's version and CUDA build, cuDNN and NCCL, and the driver's device view, without `import torch`.

`import torch` takes 4-6 s on the H200 image (no bytecode cache), more than the whole 5 s
budget of the idle health probe, so the idle path reads the same facts from their sources:
torch's own torch/version.py (parsed with ast, never executed), the cuDNN and NCCL libraries
torch would load (dlopen + cudnnGetVersion / ncclGetVersion), and the CUDA driver API that torch
enumerates devices through (harness.probes.cuda_driver). Each fact names its source.
The keys are those of harness.probes.health.torch_view.torch_facts. Standard library only.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
from pathlib import Path
from typing import Any

from harness.probes import cuda_driver
from harness.probes.contract import describe_exception, is_unavailable, unavailable
from harness.probes.loaded_libraries import open_library

DEVICE_VIEW_SOURCE = (
    "CUDA driver API via ctypes (libcuda: cuInit, cuDeviceGet*; the enumeration torch "
    "uses, honouring CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER); torch itself is not "
    "imported so the idle probe stays under 5 s (use --torch for torch's own answer)"
)
CUDNN_SONAME, NCCL_SONAME = "libcudnn.so.9", "libnccl.so.2"
TORCH_KEYS = (
    "torch_version",
    "torch_cuda_build",
    "cudnn_version",
    "nccl_version",
    "nccl_available",
    "torch_cuda_available",
    "torch_device_count",
    "torch_devices",
)


def torch_directory() -> Path | None:
    """The installed torch package's folder, found (not imported) on sys.path."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def version_file_facts(path: Path) -> dict[str, Any]:
    """The literal assignments of torch/version.py ('__version__', 'cuda', ...), parsed, not run."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: dict[str, Any] = {}
    for node in tree.body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else node.target
            if isinstance(node, ast.AnnAssign)
            else None
        )
        if (
            isinstance(target, ast.Name)
            and isinstance(node, (ast.Assign, ast.AnnAssign))
            and isinstance(node.value, ast.Constant)
        ):
            found[target.id] = node.value.value
    return found


def torch_build(directory: Path | None) -> dict[str, Any]:
    """torch_version, torch_cuda_build and torch_version_source from torch/version.py."""
    if directory is None:
        reason = unavailable("torch is not installed: importlib.util.find_spec('torch') found no module")
        return {"torch_version": reason, "torch_cuda_build": reason, "torch_version_source": reason}
    path = directory / "version.py"
    source = f"{path} (parsed with ast; torch not imported)"
    try:
        found = version_file_facts(path)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        reason = unavailable(f"{path} unreadable: {describe_exception(exc)}")
        return {"torch_version": reason, "torch_cuda_build": reason, "torch_version_source": source}
    version = found.get("__version__")
    if not isinstance(version, str):
        version = unavailable(f"{path} assigns no literal __version__")
    cuda = found.get("cuda", unavailable(f"{path} assigns no literal cuda"))
    if cuda is None:
        cuda = unavailable(f"torch {version} was built without CUDA ({path}: cuda = None)")
    return {"torch_version": version, "torch_cuda_build": cuda, "torch_version_source": source}


def cudnn(torch_dir: Path | None) -> dict[str, Any]:
    """cudnnGetVersion() of the libcudnn torch would load (91900 = 9.19.0, torch's own form)."""
    lib, where = open_library(CUDNN_SONAME, ("nvidia.cudnn",), _torch_lib(torch_dir))
    if lib is None:
        return {"cudnn_version": where, "cudnn_library": where}
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    return {"cudnn_version": int(lib.cudnnGetVersion()), "cudnn_library": where}


def nccl(torch_dir: Path | None) -> dict[str, Any]:
    """ncclGetVersion() of the libnccl torch would load, as 'major.minor.patch'."""
    lib, where = open_library(NCCL_SONAME, ("nvidia.nccl",), _torch_lib(torch_dir))
    if lib is None:
        return {"nccl_version": where, "nccl_available": False, "nccl_library": where}
    code = ctypes.c_int()
    result = lib.ncclGetVersion(ctypes.pointer(code))
    if result != 0:
        reason = unavailable(f"ncclGetVersion returned ncclResult_t {result} ({where})")
        return {"nccl_version": reason, "nccl_available": False, "nccl_library": where}
    return {"nccl_version": nccl_version_text(code.value), "nccl_available": True, "nccl_library": where}


def nccl_version_text(code: int) -> str:
    """NCCL_VERSION_CODE -> 'X.Y.Z': X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since."""
    if code < 10000:
        return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


def _torch_lib(torch_dir: Path | None) -> tuple[Path, ...]:
    return (torch_dir / "lib",) if torch_dir is not None and (torch_dir / "lib").is_dir() else ()


def software_facts() -> dict[str, Any]:
    """The torch_facts keys (and their sources) read without importing torch."""
    torch_dir = torch_directory()
    facts = torch_build(torch_dir)
    facts.update(cudnn(torch_dir))
    facts.update(nccl(torch_dir))
    driver, library = cuda_driver.load()
    facts.update(library)
    view = cuda_driver.driver_view(driver, library["cuda_driver_library"])
    facts["cuda_driver_api_version"] = view["cuda_driver_api_version"]
    build = facts["torch_cuda_build"]
    if is_unavailable(build):
        # torch uses no CUDA device whatever the driver lists; say why in torch's terms.
        facts.update(torch_cuda_available=False, torch_device_count=build, torch_devices=build)
    elif not view["cuda_initialised"]:
        reason = unavailable(f"CUDA cannot initialise: {view['devices']['unavailable']}")
        facts.update(torch_cuda_available=False, torch_device_count=reason, torch_devices=reason)
    else:
        facts.update(
            torch_cuda_available=view["device_count"] > 0,
            torch_device_count=view["device_count"],
            torch_devices=view["devices"],
        )
    facts["device_view_source"] = DEVICE_VIEW_SOURCE
    facts["torch_imported"] = False
    return facts
