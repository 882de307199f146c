"""What each GPU's links are: NVML's PCIe and NVLink facts, the host NUMA node, the published
memory bandwidth, the GPU pairs' topology cells and whether peer access is possible.

The NVML device of a torch device is matched by UUID (CUDA renumbers devices), never by
position. PCIe generation and width are read twice: at idle and while copies run (many GPUs
lower the link generation at idle to save power, so only the reading under load says what the
copies crossed). Standard library, nvidia-ml-py and (passed in) torch.
"""

from __future__ import annotations

from itertools import permutations
from pathlib import Path
from typing import Any

from harness import catalogue
from harness.analysis.device_mapping import nvml_index_by_uuid
from harness.analysis.topology import gpu_pairs
from harness.analysis.transfer.links import NVLINK_VERSION_NAMES
from harness.probes.contract import attempt, unavailable
from harness.probes.devices import nvlink_facts, pcie_facts, text
from harness.probes.interconnect import nvml_links
from harness.probes.nvml import NvmlSession
from harness.probes.transfer.host import PCI_ROOT, gpu_numa


def nvml_device(nvml: NvmlSession, uuid: Any) -> tuple[Any, Any]:
    """(NVML index, handle) of the device with torch's UUID, or (unavailable, None)."""
    if not nvml.ok:
        return unavailable(nvml.reason or "NVML unavailable"), None
    if not isinstance(uuid, str):
        return unavailable("torch gave no UUID for this device, so no NVML device can be matched to it"), None
    try:
        handles = nvml.handles()
        uuids = {i: text(nvml.pynvml.nvmlDeviceGetUUID(h)) for i, h in enumerate(handles)}
    except Exception as exc:  # noqa: BLE001 - NVML's own error is the reason
        return unavailable(f"{type(exc).__name__}: {exc}"), None
    index = nvml_index_by_uuid(uuid, uuids)
    if index is None:
        return unavailable(f"no NVML device has torch's UUID {uuid}"), None
    return index, handles[index]


def nvlink_summary(pynvml: Any, handle: Any) -> dict[str, Any]:
    """Link states, the active count and the NVLink version (NVML code and name)."""
    states = nvlink_facts(pynvml, handle)
    if not isinstance(states, list):
        return {"links": states, "active_links": states, "version_code": states, "version": states}
    active = [link["link"] for link in states if link["active"]]
    if not active:
        none = unavailable("no active NVLink")
        return {"links": states, "active_links": 0, "version_code": none, "version": none}
    code = attempt(pynvml.nvmlDeviceGetNvLinkVersion, handle, active[0])
    name = (
        NVLINK_VERSION_NAMES.get(code, unavailable(f"NVML version code {code} is not known to this build"))
        if isinstance(code, int)
        else code
    )
    return {"links": states, "active_links": len(active), "version_code": code, "version": name}


def memory_spec(pynvml: Any, handle: Any) -> tuple[Any, str]:
    """(published memory bandwidth GB/s or unavailable, source) from the catalogue SKU."""
    pci = attempt(lambda: pynvml.nvmlDeviceGetPciInfo_v3(handle).pciDeviceId)
    if not isinstance(pci, int):
        return pci, "no PCI device id"
    memory = attempt(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).total / 2**20)
    power = attempt(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
    found = catalogue.identify(
        pci, memory if isinstance(memory, float) else None, power if isinstance(power, float) else None
    )
    if found.sku is None:
        return unavailable(found.evidence), found.evidence
    published = found.sku["published"]
    return published["memory_bandwidth_gbps"], f"catalogue {found.sku_id}: {published['source']}"


def gpu_facts(torch: Any, nvml: NvmlSession, index: int, pci_root: Path = PCI_ROOT) -> tuple[dict[str, Any], Any]:
    """One GPU's record for the document, and its NVML handle (None when unmatched)."""
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    nvml_index, handle = nvml_device(nvml, str(uuid) if uuid is not None else None)
    facts: dict[str, Any] = {
        "torch_index": index,
        "name": props.name,
        "uuid": str(uuid) if uuid is not None else unavailable("torch gives no UUID"),
        "nvml_index": nvml_index,
    }
    if handle is None:
        reason = nvml_index
        facts.update(
            pci_bus_id=reason,
            numa=gpu_numa(None, None, None),
            pcie={"idle": reason, "under_copy": reason, "under_copy_how": reason["unavailable"]},
            nvlink={"links": reason, "active_links": reason, "version_code": reason, "version": reason},
            memory_spec_gbps=reason,
            memory_spec_source=reason["unavailable"],
        )
        return facts, None
    pynvml = nvml.pynvml
    bus = attempt(lambda: text(pynvml.nvmlDeviceGetPciInfo_v3(handle).busId))
    spec, source = memory_spec(pynvml, handle)
    facts.update(
        pci_bus_id=bus,
        numa=gpu_numa(pynvml, handle, bus, pci_root),
        pcie={
            "idle": pcie_facts(pynvml, handle),
            "under_copy": unavailable("not read yet"),
            "under_copy_how": "not read yet",
        },
        nvlink=nvlink_summary(pynvml, handle),
        memory_spec_gbps=spec,
        memory_spec_source=source,
    )
    return facts, handle


def peer_access(torch: Any, indices: list[int]) -> dict[str, Any]:
    """{"a->b": cudaDeviceCanAccessPeer(a, b)} for every ordered pair (torch indices)."""
    return {f"{a}->{b}": attempt(torch.cuda.can_device_access_peer, a, b) for a, b in permutations(indices, 2)}


def topology(capture: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The topo -m capture, the cells between the GPUs measured (by NVML index), NVML's P2P status."""
    indices = [g["nvml_index"] for g in gpus]
    if len(indices) < 2:
        p2p: Any = unavailable(f"{len(indices)} GPU: no pairs")
    elif all(isinstance(i, int) for i in indices):
        links = nvml_links(sorted(indices))
        p2p = links["p2p_status"] if isinstance(links, dict) and "p2p_status" in links else links
    else:
        p2p = unavailable("not every GPU has an NVML index (see gpus[].nvml_index)")
    return pair_topology(capture, gpus, p2p)


def pair_topology(capture: dict[str, Any], gpus: list[dict[str, Any]], nvml_p2p: Any) -> dict[str, Any]:
    """The topology block from a topo -m capture and NVML's P2P status (read or recorded)."""
    indices = [g["nvml_index"] for g in gpus]
    matrix = capture["matrix"]
    if not all(isinstance(i, int) for i in indices):
        pairs: Any = unavailable("not every GPU has an NVML index (see gpus[].nvml_index)")
    elif "rows" not in matrix:
        pairs = unavailable(f"no parsed nvidia-smi topo -m matrix: {matrix['unavailable']}")
    else:
        pairs = gpu_pairs(matrix, sorted(indices))
    return {"nvidia_smi_topo": capture, "gpu_pairs": pairs, "nvml_p2p": nvml_p2p}
