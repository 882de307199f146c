"""Topology evidence for the collective probe: `nvidia-smi topo -m`, NVLink states, PCIe links
and NVML's peer-to-peer status. Standard library and nvidia-ml-py only; every read that fails
becomes {"unavailable": reason}.

The topo -m capture and the per-device NVLink/PCIe reads are the health probe's own
(`topology`, `devices`), so both documents describe a link the same way; only
the pairwise peer-to-peer status is read here.
"""

from __future__ import annotations

import os
from typing import Any

from harness.analysis.topology import gpu_pairs
from harness.probes.contract import attempt, unavailable
from harness.probes.devices import nvlink_facts, pcie_facts, text
from harness.probes.nvml import NvmlSession
from harness.probes.topology import TopologyCapture

# nvmlGpuP2PStatus_t (nvml.h)
P2P_STATUS = {
    0: "ok",
    1: "chipset_not_supported",
    2: "gpu_not_supported",
    3: "topology_not_supported",
    4: "disabled_by_regkey",
    5: "not_supported",
    6: "unknown",
}


def visible_gpu_indices(count: int, environ: dict[str, str] | None = None) -> Any:
    """nvidia-smi (PCI bus order) index of CUDA devices 0..count-1, given CUDA_DEVICE_ORDER=PCI_BUS_ID.

    Integer CUDA_VISIBLE_DEVICES lists map directly; UUID lists are resolved through NVML.
    """
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(range(count))
    tokens = [t.strip() for t in visible.split(",") if t.strip()][:count]
    if all(t.isdigit() for t in tokens):
        return [int(t) for t in tokens]
    with NvmlSession() as nvml:
        if not nvml.ok:
            return unavailable(f"CUDA_VISIBLE_DEVICES names UUIDs and NVML is unavailable: {nvml.reason}")
        uuids = [text(nvml.pynvml.nvmlDeviceGetUUID(h)) for h in nvml.handles()]
    indices = []
    for token in tokens:
        match = [i for i, uuid in enumerate(uuids) if str(uuid).startswith(token)]
        if len(match) != 1:
            return unavailable(f"CUDA_VISIBLE_DEVICES entry {token!r} matches {len(match)} NVML devices")
        indices.append(match[0])
    return indices


def _p2p(pynvml: Any, a: Any, b: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, constant in (("nvlink", "NVML_P2P_CAPS_INDEX_NVLINK"), ("read", "NVML_P2P_CAPS_INDEX_READ")):
        if not hasattr(pynvml, constant):
            out[label] = unavailable(f"nvidia-ml-py has no {constant}")
            continue
        index = getattr(pynvml, constant)
        index = index[0] if isinstance(index, tuple) else index  # some releases define READ as (0,)
        status = attempt(pynvml.nvmlDeviceGetP2PStatus, a, b, index)
        out[label] = P2P_STATUS.get(status, f"status_{status}") if isinstance(status, int) else status
    return out


def nvml_links(indices: list[int]) -> Any:
    """Per GPU (nvidia-smi index): PCIe link, NVLink states; per pair: NVML peer-to-peer status."""
    with NvmlSession() as nvml:
        if not nvml.ok:
            return unavailable(nvml.reason or "NVML unavailable")
        pynvml = nvml.pynvml
        handles = nvml.handles()
        devices, pairs = [], {}
        for index in indices:
            if index >= len(handles):
                devices.append({"index": index, "error": unavailable(f"NVML sees only {len(handles)} devices")})
                continue
            handle = handles[index]
            devices.append(
                {
                    "index": index,
                    "name": attempt(lambda h=handle: text(pynvml.nvmlDeviceGetName(h))),
                    "pci_bus_id": attempt(lambda h=handle: text(pynvml.nvmlDeviceGetPciInfo(h).busId)),
                    "pcie": pcie_facts(pynvml, handle),
                    "nvlink": nvlink_facts(pynvml, handle),
                    "nvlink_version": attempt(pynvml.nvmlDeviceGetNvLinkVersion, handle, 0),
                }
            )
        for pos, a in enumerate(indices):
            for b in indices[pos + 1 :]:
                if max(a, b) < len(handles):
                    pairs[f"GPU{a}-GPU{b}"] = _p2p(pynvml, handles[a], handles[b])
        return {"devices": devices, "p2p_status": pairs}


def gather(gpu_count: int) -> dict[str, Any]:
    """Everything the normal-versus-control explanation draws on, for the GPUs the ranks use."""
    indices = visible_gpu_indices(gpu_count) if gpu_count > 0 else []
    topo = TopologyCapture.start().result()  # the health probe's capture: same command, same parse
    evidence: dict[str, Any] = {"gpu_indices": indices, "nvidia_smi_topo": topo}
    if isinstance(indices, list) and indices:
        evidence["nvml"] = nvml_links(indices)
        matrix = topo["matrix"]
        if "rows" in matrix:
            evidence["gpu_pairs"] = gpu_pairs(matrix, indices)
        else:
            evidence["gpu_pairs"] = unavailable(f"no parsed nvidia-smi topo -m matrix: {matrix['unavailable']}")
    else:
        # a dict from visible_gpu_indices is its unavailable(...) record
        reason = indices["unavailable"] if isinstance(indices, dict) else "no GPU used by the ranks"
        evidence["nvml"] = unavailable(reason)
        evidence["gpu_pairs"] = unavailable(reason)
    return evidence
