"""The CUDA devices as the driver enumerates them, read through libcuda with ctypes.

torch's CUDA runtime enumerates devices through this same driver API (cuInit, then
cuDeviceGet...), and the driver applies CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER at cuInit,
so this is the device list, order, UUIDs and PCI locations torch would get, without the
seconds `import torch` costs. Every failing call is {"unavailable": "CUDA_ERROR_X: text (call)"}
with the driver's own cuGetErrorName/cuGetErrorString words; a missing libcuda is the
dynamic loader's own error text. Standard library only.
"""

from __future__ import annotations

import ctypes
from typing import Any

from harness.analysis.device_mapping import normalise_bus_id, normalise_uuid
from harness.probes.contract import unavailable
from harness.probes.loaded_libraries import loaded_path

LIBCUDA = "libcuda.so.1"
# CUdevice_attribute values from cuda.h (stable since CUDA 6).
ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
NAME_BYTES = 256
BUS_ID_BYTES = 64


class CudaError(Exception):
    """A driver call returned a CUresult other than CUDA_SUCCESS; the message is the driver's."""


class CUuuid(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * 16)]


class Driver:
    """Calls into a loaded libcuda (or any object with the same functions, for tests)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def call(self, name: str, *args: Any) -> None:
        """Call `name`; raise CudaError with the driver's error name and text when it fails."""
        function = getattr(self.lib, name, None)
        if function is None:
            raise CudaError(f"{name} is not exported by this libcuda (driver too old?)")
        result = function(*args)
        if result != 0:
            raise CudaError(f"{self.describe(result)} ({name})")

    def describe(self, result: int) -> str:
        """'CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected' for a CUresult."""
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if self.lib.cuGetErrorName(result, ctypes.pointer(name)) != 0 or not name.value:
            return f"CUresult {result} (cuGetErrorName does not know it)"
        if self.lib.cuGetErrorString(result, ctypes.pointer(text)) != 0 or not text.value:
            return name.value.decode(errors="replace")
        return f"{name.value.decode(errors='replace')}: {text.value.decode(errors='replace')}"

    def integer(self, name: str, *args: Any) -> int:
        value = ctypes.c_int()
        self.call(name, ctypes.pointer(value), *args)
        return value.value

    def text(self, name: str, size: int, device: int) -> str:
        buffer = ctypes.create_string_buffer(size)
        self.call(name, buffer, size, device)
        return buffer.value.decode(errors="replace")


def load(path: str = LIBCUDA) -> tuple[Driver | None, dict[str, Any]]:
    """(driver, {"cuda_driver_library": path or why not}); the loader's own text when dlopen fails."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return None, {"cuda_driver_library": unavailable(f"CUDA driver library not loadable: {exc}")}
    return Driver(lib), {"cuda_driver_library": loaded_path("libcuda.so", path)}


def driver_view(driver: Driver | None, why_not: Any = None) -> dict[str, Any]:
    """The driver's CUDA version and its device list, each fact a value or the driver's reason.

    Keys: cuda_driver_api_version, cuda_initialised (bool), device_count, devices (list of
    torch_device records) or the unavailable reason in both.
    """
    if driver is None:
        return {
            "cuda_driver_api_version": why_not,
            "cuda_initialised": False,
            "device_count": why_not,
            "devices": why_not,
        }
    facts: dict[str, Any] = {"cuda_driver_api_version": _attempt(lambda: _version(driver))}
    try:
        driver.call("cuInit", 0)
        count = driver.integer("cuDeviceGetCount")
    except CudaError as exc:
        reason = unavailable(str(exc))
        return {**facts, "cuda_initialised": False, "device_count": reason, "devices": reason}
    return {
        **facts,
        "cuda_initialised": True,
        "device_count": count,
        "devices": [device_record(driver, index) for index in range(count)],
    }


def _version(driver: Driver) -> str:
    """13000 -> '13.0' (the form NVML's CUDA driver version takes)."""
    code = driver.integer("cuDriverGetVersion")
    return f"{code // 1000}.{code % 1000 // 10}"


def device_record(driver: Driver, index: int) -> dict[str, Any]:
    """One device in the fields of a torch device record (torch_index = the CUDA ordinal)."""
    try:
        handle = driver.integer("cuDeviceGet", index)
    except CudaError as exc:
        reason = unavailable(str(exc))
        return {
            "torch_index": index,
            **dict.fromkeys(
                ("name", "uuid", "pci_bus_id", "total_memory_mib", "compute_capability", "multiprocessor_count"), reason
            ),
        }
    return {
        "torch_index": index,
        "name": _attempt(lambda: driver.text("cuDeviceGetName", NAME_BYTES, handle)),
        "uuid": _attempt(lambda: _uuid(driver, handle)),
        "pci_bus_id": _attempt(lambda: normalise_bus_id(driver.text("cuDeviceGetPCIBusId", BUS_ID_BYTES, handle))),
        "total_memory_mib": _attempt(lambda: round(_total_memory(driver, handle) / 2**20, 1)),
        "compute_capability": _attempt(
            lambda: "{}.{}".format(
                driver.integer("cuDeviceGetAttribute", ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
                driver.integer("cuDeviceGetAttribute", ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
            )
        ),
        "multiprocessor_count": _attempt(
            lambda: driver.integer("cuDeviceGetAttribute", ATTRIBUTE_MULTIPROCESSOR_COUNT, handle)
        ),
    }


def _uuid(driver: Driver, handle: int) -> str:
    """NVML's spelling, GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (v2 where the driver has it)."""
    raw = CUuuid()
    name = "cuDeviceGetUuid_v2" if getattr(driver.lib, "cuDeviceGetUuid_v2", None) is not None else "cuDeviceGetUuid"
    driver.call(name, ctypes.pointer(raw), handle)
    hexed = bytes(raw.bytes).hex()
    return normalise_uuid(f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}")


def _total_memory(driver: Driver, handle: int) -> int:
    value = ctypes.c_size_t()
    driver.call("cuDeviceTotalMem_v2", ctypes.pointer(value), handle)
    return value.value


def _attempt(read: Any) -> Any:
    try:
        return read()
    except CudaError as exc:
        return unavailable(str(exc))
