"""Digests of computed results, against silent data corruption (issue 24).

Standard library and torch only. `tensor_sha256` hashes a tensor's values exactly as stored: the
tensor copied to the host, contiguous, row-major, each element in its dtype's native byte order
(little-endian on every host the probes run on; `sys.byteorder` is recorded beside it). Two
results with the same digest are the same bits; what a digest is taken of, and why equal inputs
must give equal bits, is harness.analysis.digests.

`gemm_libraries` records what the bits of a GEMM result depend on besides the inputs: the torch
build and, on a GPU, the cuBLAS library the worker actually mapped (its file and the version it
reports through cublasGetProperty); on a CPU, the CPU BLAS path torch dispatches to (its CPU
capability) and the thread count.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
from typing import Any

from harness.probes.contract import describe_exception, unavailable
from harness.probes.loaded_libraries import mapped_file

CUBLAS_PREFIX = "libcublas.so"  # not libcublasLt: cublasGetProperty is libcublas's
CUBLAS_PROPERTIES = (0, 1, 2)  # libraryPropertyType MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL


def tensor_sha256(tensor: Any) -> str:
    """sha256 of the tensor's element bytes (host copy, contiguous, row-major, native byte order)."""
    host = tensor.detach().to("cpu").contiguous()
    size = host.numel() * host.element_size()
    data = ctypes.string_at(host.data_ptr(), size) if size else b""
    return hashlib.sha256(data).hexdigest()


def cublas_version() -> dict[str, Any]:
    """The cuBLAS library mapped into this process and its version, or why it cannot be read."""
    path = mapped_file(CUBLAS_PREFIX)
    if path is None:
        return unavailable(f"no {CUBLAS_PREFIX}* is mapped into this process (/proc/self/maps)")
    try:
        library = ctypes.CDLL(path)
        parts = []
        for prop in CUBLAS_PROPERTIES:
            value = ctypes.c_int()
            status = library.cublasGetProperty(prop, ctypes.byref(value))
            if status != 0:
                return unavailable(f"cublasGetProperty({prop}) returned status {status} ({path})")
            parts.append(str(value.value))
    except (OSError, AttributeError) as exc:
        return unavailable(f"{path}: {describe_exception(exc)}")
    return {"library": path, "version": ".".join(parts)}


def gemm_libraries(torch: Any, device: str) -> dict[str, Any]:
    """What a GEMM's bits depend on besides its inputs, as this process ran it."""
    found: dict[str, Any] = {"torch": torch.__version__, "byteorder": sys.byteorder}
    if device == "cuda":
        found["cuda_runtime"] = torch.version.cuda
        found["cublas"] = cublas_version()
        return found
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    found["cpu_capability"] = (
        capability()
        if callable(capability)
        else unavailable("torch.backends.cpu.get_cpu_capability is not in this torch")
    )
    found["threads"] = torch.get_num_threads()
    return found
