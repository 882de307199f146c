"""What torch sees: its version, CUDA build, cuDNN and NCCL, and the CUDA devices it can use.

Torch is imported here, lazily: it is the slowest import of the health probe (4-6 s on the
H200 image), so only `--torch` and `--under-load` (whose load needs torch anyway) come here;
the idle path reads the same facts without torch (harness.probes.health.torch_files).
"""

from __future__ import annotations

import os
from typing import Any

from harness.analysis.device_mapping import normalise_uuid
from harness.probes.contract import attempt, describe_exception, interrupts_deferred, unavailable
from harness.probes.health.torch_files import TORCH_KEYS
from harness.probes.loaded_libraries import mapped_file

DEVICE_VIEW_SOURCE = "torch.cuda (torch imported: torch.cuda.init, device_count, get_device_properties)"
VERSION_SOURCE = "torch.__version__ and torch.version.cuda (torch imported)"


def torch_facts() -> dict[str, Any]:
    """Software versions as torch reports them, and torch's list of CUDA devices."""
    try:
        with interrupts_deferred():  # a stop during torch's native initialisation would abort, not unwind
            import torch
    except Exception as exc:  # noqa: BLE001 - a missing or broken torch is a recorded fact
        reason = unavailable(f"torch cannot be imported: {describe_exception(exc)}")
        return {
            **dict.fromkeys(TORCH_KEYS, reason),
            **_sources(reason),
        }
    version = torch.__version__
    cuda_build = torch.version.cuda
    no_cuda = unavailable(f"torch {version} was built without CUDA")
    facts: dict[str, Any] = {
        **_sources(VERSION_SOURCE),
        "torch_version": version,
        "torch_cuda_build": cuda_build or no_cuda,
        "cudnn_version": _cudnn(torch) if cuda_build else no_cuda,
        "nccl_version": _nccl(torch) if cuda_build else no_cuda,
        "nccl_available": (
            attempt(torch.distributed.is_nccl_available)
            if torch.distributed.is_available()
            else unavailable("torch.distributed is not available in this build")
        ),
    }
    facts.update(cudnn_library=_mapped("libcudnn.so"), nccl_library=_mapped("libnccl.so"))
    if not cuda_build:
        facts.update(torch_cuda_available=False, torch_device_count=no_cuda, torch_devices=no_cuda)
        return facts
    try:
        torch.cuda.init()  # raises the driver's own reason when CUDA cannot start
    except Exception as exc:  # noqa: BLE001 - the driver's reason is the recorded fact
        reason = unavailable(f"CUDA cannot initialise: {describe_exception(exc)}")
        facts.update(torch_cuda_available=False, torch_device_count=reason, torch_devices=reason)
        return facts
    count = torch.cuda.device_count()
    facts.update(
        torch_cuda_available=True, torch_device_count=count, torch_devices=[_device(torch, i) for i in range(count)]
    )
    return facts


def _sources(version_source: Any) -> dict[str, Any]:
    return {
        "torch_version_source": version_source,
        "device_view_source": DEVICE_VIEW_SOURCE,
        "torch_imported": not isinstance(version_source, dict),
    }


def _mapped(prefix: str) -> Any:
    """The library file torch has loaded (after its version queries), from /proc/self/maps."""
    return mapped_file(prefix) or unavailable(f"no {prefix}* file is mapped in this process after torch's query")


def _cudnn(torch: Any) -> Any:
    version = attempt(torch.backends.cudnn.version)
    if version is None:
        return unavailable("torch.backends.cudnn.version() returned None: cuDNN is not loadable")
    return version


def _nccl(torch: Any) -> Any:
    version = attempt(torch.cuda.nccl.version)
    if isinstance(version, tuple):
        return ".".join(str(part) for part in version)
    return version


def _device(torch: Any, index: int) -> dict[str, Any]:
    """One torch device: the identity needed to map it to NVML (UUID, PCI bus id)."""
    props = attempt(torch.cuda.get_device_properties, index)
    if not hasattr(props, "name"):
        return {
            "torch_index": index,
            "name": props,
            "uuid": props,
            "pci_bus_id": props,
            "total_memory_mib": props,
            "compute_capability": props,
            "multiprocessor_count": props,
        }
    uuid = getattr(props, "uuid", None)
    return {
        "torch_index": index,
        "name": props.name,
        "uuid": (
            normalise_uuid(str(uuid))
            if uuid is not None
            else unavailable(f"torch {torch.__version__} does not expose the device UUID")
        ),
        "pci_bus_id": _pci_bus_id(props),
        "total_memory_mib": round(props.total_memory / 2**20, 1),
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessor_count": props.multi_processor_count,
    }


def _pci_bus_id(props: Any) -> Any:
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if any(p is None for p in parts):
        return unavailable("this torch version does not expose the PCI location of the device")
    domain, bus, device = parts
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def cuda_visible_devices() -> str | None:
    """The variable as set (None when unset: every device is visible)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")
