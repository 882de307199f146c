"""CUDA C++ compiled at run time by NVRTC and launched through the driver API, with ctypes.

For kernels torch has no call for (the bandwidth probe's read kernels): the source is compiled to PTX
for the device's own architecture by the NVRTC library torch's CUDA build ships (found where torch's
loader finds it: harness.probes.loaded_libraries.open_library), loaded into the context torch made
current (cuModuleLoadData), and launched on torch's current stream, so torch's CUDA events time it
like any torch call. A launch is one cuLaunchKernel with its arguments packed once. Every failure is an
NvrtcError carrying NVRTC's log or the driver's error name and text. Standard library only (torch is
handed in by the caller).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.probes.cuda_driver import CudaError, Driver
from harness.probes.cuda_driver import load as load_driver
from harness.probes.loaded_libraries import open_library


class NvrtcError(Exception):
    """NVRTC or the driver refused: the message is their own (the compile log, the CUresult)."""


def nvrtc_library(torch: Any) -> tuple[Any, str]:
    """(libnvrtc, the file loaded) for torch's CUDA major version, or NvrtcError saying where it looked."""
    major = str(torch.version.cuda or "").split(".")[0]
    if not major.isdigit():
        raise NvrtcError(f"torch {torch.__version__} has no CUDA build (torch.version.cuda {torch.version.cuda!r})")
    lib, where = open_library(
        f"libnvrtc.so.{major}", ("nvidia.cuda_nvrtc", f"nvidia.cu{major}"), (Path(torch.__file__).parent / "lib",)
    )
    if lib is None:
        raise NvrtcError(str(where["unavailable"]) if isinstance(where, dict) else str(where))
    _preload_builtins(Path(str(where)).parent)
    return lib, str(where)


def _preload_builtins(folder: Path) -> None:
    """NVRTC opens its builtins library by name at the first compile; loaded from beside it first, the
    name is found whether or not that folder is on the loader's path (a pip wheel's nvidia/cu13/lib)."""
    for candidate in sorted(folder.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in candidate.name:
            try:
                ctypes.CDLL(str(candidate), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue  # the compile then says which file it could not open
            return


def _check(lib: Any, result: int, call: str) -> None:
    if result != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        text = lib.nvrtcGetErrorString(result)
        raise NvrtcError(f"{call}: {text.decode(errors='replace') if text else f'nvrtcResult {result}'}")


def compile_ptx(lib: Any, source: str, name: str, arch: str, options: Sequence[str] = ()) -> bytes:
    """SOURCE compiled to PTX for ARCH ('compute_90'); NvrtcError with NVRTC's log when it does not compile."""
    program = ctypes.c_void_p()
    _check(
        lib,
        lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), f"{name}.cu".encode(), 0, None, None),
        "nvrtcCreateProgram",
    )
    try:
        flags = [f"--gpu-architecture={arch}".encode(), b"-default-device", *(o.encode() for o in options)]
        result = lib.nvrtcCompileProgram(program, len(flags), (ctypes.c_char_p * len(flags))(*flags))
        if result != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, log)
            raise NvrtcError(f"{name} does not compile for {arch}: {log.value.decode(errors='replace').strip()}")
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
        return ptx.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


class Kernel:
    """One `extern "C"` kernel of compiled PTX, loaded into the calling thread's current CUDA context."""

    def __init__(self, driver: Driver, ptx: bytes, name: str) -> None:
        self.driver, self.name = driver, name
        self.module, self.function = ctypes.c_void_p(), ctypes.c_void_p()
        context = ctypes.c_void_p()
        try:
            driver.call("cuCtxGetCurrent", ctypes.byref(context))
            if not context.value:
                raise NvrtcError("no CUDA context is current on this thread (torch has not initialised CUDA here)")
            driver.call("cuModuleLoadData", ctypes.byref(self.module), ptx)
            driver.call("cuModuleGetFunction", ctypes.byref(self.function), self.module, name.encode())
        except CudaError as exc:
            raise NvrtcError(f"loading {name}: {exc}") from exc

    def launcher(self, grid: int, block: int, arguments: Sequence[Any], stream: int, shared_bytes: int = 0) -> Launch:
        """A call that launches the kernel once with ARGUMENTS (ctypes values, packed here once) on STREAM
        (a cudaStream_t handle, torch.cuda.current_stream().cuda_stream)."""
        return Launch(self, grid, block, arguments, stream, shared_bytes)


class Launch:
    """One kernel's launch with its arguments packed once: each call is one cuLaunchKernel."""

    def __init__(
        self, kernel: Kernel, grid: int, block: int, arguments: Sequence[Any], stream: int, shared_bytes: int
    ) -> None:
        self.kernel, self.grid, self.block, self.shared_bytes = kernel, grid, block, shared_bytes
        self.arguments = list(arguments)  # the values the pointer array points into live as long as this
        self.params = (ctypes.c_void_p * len(self.arguments))(*(ctypes.addressof(a) for a in self.arguments))
        self.stream = ctypes.c_void_p(stream)
        self.launch = kernel.driver.lib.cuLaunchKernel

    def __call__(self) -> None:
        result = self.launch(
            self.kernel.function, self.grid, 1, 1, self.block, 1, 1, self.shared_bytes, self.stream, self.params, None
        )
        if result != 0:
            raise NvrtcError(f"cuLaunchKernel {self.kernel.name}: {self.kernel.driver.describe(result)}")


def build(torch: Any, source: str, name: str, options: Sequence[str] = ()) -> tuple[Kernel, dict[str, str]]:
    """SOURCE's kernel NAME compiled for the current device and loaded, and what was used: the NVRTC
    library's file, its version and the architecture. torch must have initialised CUDA on this thread."""
    lib, path = nvrtc_library(torch)
    major, minor = torch.cuda.get_device_capability()
    arch = f"compute_{major}{minor}"
    version = (ctypes.c_int(), ctypes.c_int())
    lib.nvrtcVersion(ctypes.byref(version[0]), ctypes.byref(version[1]))
    driver, found = load_driver()
    if driver is None:
        raise NvrtcError(str(found["cuda_driver_library"]["unavailable"]))
    torch.cuda.synchronize()  # a runtime call on this thread: torch's context is current for the driver
    kernel = Kernel(driver, compile_ptx(lib, source, name, arch, options), name)
    return kernel, {"nvrtc_library": path, "nvrtc_version": f"{version[0].value}.{version[1].value}", "arch": arch}
