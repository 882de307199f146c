"""Topology evidence for the collective probe: `nvidia-smi topo -m`, NVLink states, PCIe links
and NVML's peer-to-peer status. Standard library and nvidia-ml-py only; every read that fails
becomes {"unavailable": reason}.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from harness.analysis import topo_matrix
from harness.probes._contract import attempt, describe_exception, unavailable
from harness.probes._nvml import NvmlSession

TOPO_COMMAND = ("nvidia-smi", "topo", "-m")

# nvmlGpuP2PStatus_t (nvml.h)
P2P_STATUS = {0: "ok", 1: "chipset_not_supported", 2: "gpu_not_supported", 3: "topology_not_supported",
              4: "disabled_by_regkey", 5: "not_supported", 6: "unknown"}


def nvidia_smi_topo() -> Any:
    """The raw `nvidia-smi topo -m` text and its parsed matrix, or why it could not be read."""
    if shutil.which(TOPO_COMMAND[0]) is None:
        return unavailable("nvidia-smi not found on PATH")
    try:
        done = subprocess.run(TOPO_COMMAND, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return unavailable(describe_exception(exc))
    if done.returncode != 0:
        return unavailable(f"`{' '.join(TOPO_COMMAND)}` exited with code {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-400:] or 'no output'}")
    return {"command": " ".join(TOPO_COMMAND), "raw": done.stdout, "parsed": attempt(topo_matrix.parse, done.stdout)}


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
        uuids = [nvml.pynvml.nvmlDeviceGetUUID(h) for h in nvml.handles()]
    indices = []
    for token in tokens:
        match = [i for i, uuid in enumerate(uuids) if str(uuid).startswith(token)]
        if len(match) != 1:
            return unavailable(f"CUDA_VISIBLE_DEVICES entry {token!r} matches {len(match)} NVML devices")
        indices.append(match[0])
    return indices


def _nvlinks(pynvml: Any, handle: Any) -> Any:
    links = []
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            state = pynvml.nvmlDeviceGetNvLinkState(handle, link)
        except Exception as exc:  # noqa: BLE001 - NotSupported on the first link means no NVLink
            if not links:
                return unavailable(describe_exception(exc))
            break
        links.append({"link": link, "active": bool(state)})
    return {"links": links, "active_count": sum(1 for link in links if link["active"]),
            "version": attempt(pynvml.nvmlDeviceGetNvLinkVersion, handle, 0)}


def _pcie(pynvml: Any, handle: Any) -> dict[str, Any]:
    return {"current_generation": attempt(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            "current_width": attempt(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
            "max_generation": attempt(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
            "max_width": attempt(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle)}


def _p2p(pynvml: Any, a: Any, b: Any) -> dict[str, Any]:
    out = {}
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
            devices.append({"index": index, "name": attempt(pynvml.nvmlDeviceGetName, handle),
                            "pci_bus_id": attempt(lambda h=handle: pynvml.nvmlDeviceGetPciInfo(h).busId),
                            "pcie": _pcie(pynvml, handle), "nvlink": _nvlinks(pynvml, handle)})
        for pos, a in enumerate(indices):
            for b in indices[pos + 1:]:
                if max(a, b) < len(handles):
                    pairs[f"GPU{a}-GPU{b}"] = _p2p(pynvml, handles[a], handles[b])
        return {"devices": devices, "p2p_status": pairs}


def gather(gpu_count: int) -> dict[str, Any]:
    """Everything the normal-versus-control explanation draws on, for the GPUs the ranks use."""
    indices = visible_gpu_indices(gpu_count) if gpu_count > 0 else []
    topo = nvidia_smi_topo()
    evidence: dict[str, Any] = {"gpu_indices": indices, "nvidia_smi_topo": topo}
    if isinstance(indices, list) and indices:
        evidence["nvml"] = nvml_links(indices)
        parsed = topo.get("parsed") if isinstance(topo, dict) and "raw" in topo else None
        if isinstance(parsed, dict) and "links" in parsed:
            evidence["gpu_pairs"] = topo_matrix.gpu_pairs(parsed, indices)
        else:
            evidence["gpu_pairs"] = unavailable("no parsed nvidia-smi topo -m matrix")
    else:
        reason = indices.get("unavailable") if isinstance(indices, dict) else "no GPU used by the ranks"
        evidence["nvml"] = unavailable(reason)
        evidence["gpu_pairs"] = unavailable(reason)
    return evidence
