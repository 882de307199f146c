"""The host side of a transfer: NUMA nodes, each GPU's node, and host buffers placed on a node.

Standard library (ctypes, sysfs) and, for registering memory, torch's own cudart binding.
Every fact that cannot be read is {"unavailable": reason}; nothing is assumed.

Placing a buffer on a node: the calling thread is pinned to the node's CPUs
(os.sched_setaffinity), the buffer is allocated unpinned and first touched by that thread with
one single-threaded memset (Linux's default local policy puts each page on the toucher's node;
torch's own fill would touch from its worker threads, which are pinned elsewhere), then
registered with cudaHostRegister so the copy engine can DMA from it. Where the kernel offers
move_pages(2), the node of sampled pages is checked and recorded.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

from harness.probes.contract import attempt, describe_exception, unavailable

NODE_ROOT = Path("/sys/devices/system/node")
PCI_ROOT = Path("/sys/bus/pci/devices")
MOVE_PAGES_SYSCALL = {"x86_64": 279, "aarch64": 239}  # asm/unistd.h
PAGES_CHECKED = 64
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def host_nodes(root: Path = NODE_ROOT) -> Any:
    """[{node, cpulist}] for every NUMA node with CPUs, or why none could be read."""
    try:
        folders = sorted((p for p in root.glob("node[0-9]*") if p.name[4:].isdigit()), key=lambda p: int(p.name[4:]))
    except OSError as exc:
        return unavailable(f"cannot list {root}: {describe_exception(exc)}")
    nodes = []
    for folder in folders:
        try:
            cpulist = (folder / "cpulist").read_text().strip()
        except OSError as exc:
            return unavailable(f"cannot read {folder / 'cpulist'}: {describe_exception(exc)}")
        nodes.append({"node": int(folder.name[4:]), "cpulist": cpulist})
    return nodes or unavailable(f"no node* folders under {root} (kernel without NUMA support?)")


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's '00000000:00:06.0' -> sysfs's '0000:00:06.0' (4-digit domain, lower case)."""
    domain, _, rest = nvml_bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def sysfs_numa_node(nvml_bus_id: Any, root: Path = PCI_ROOT) -> Any:
    """The device's numa_node from sysfs; -1 (no NUMA information) is recorded as unavailable."""
    if not isinstance(nvml_bus_id, str):
        return unavailable("no PCI bus id to look the device up in sysfs")
    path = root / sysfs_bus_id(nvml_bus_id) / "numa_node"
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError) as exc:
        return unavailable(f"cannot read {path}: {describe_exception(exc)}")
    return value if value >= 0 else unavailable(f"{path} is {value}: the firmware gives this device no NUMA node")


def gpu_numa(pynvml: Any, handle: Any, nvml_bus_id: Any, root: Path = PCI_ROOT) -> dict[str, Any]:
    """The host NUMA node of one GPU: NVML first, else sysfs; both readings kept."""
    nvml = (
        attempt(pynvml.nvmlDeviceGetNumaNodeId, handle)
        if pynvml is not None and handle is not None
        else unavailable("no NVML handle for this GPU")
    )
    sysfs = sysfs_numa_node(nvml_bus_id, root)
    if isinstance(nvml, int) and nvml >= 0:
        return {
            "nvml_numa_node_id": nvml,
            "sysfs_numa_node": sysfs,
            "node": nvml,
            "source": "NVML nvmlDeviceGetNumaNodeId",
        }
    if isinstance(sysfs, int):
        return {
            "nvml_numa_node_id": nvml,
            "sysfs_numa_node": sysfs,
            "node": sysfs,
            "source": "sysfs numa_node (NVML gave none)",
        }
    return {
        "nvml_numa_node_id": nvml,
        "sysfs_numa_node": sysfs,
        "node": None,
        "source": "unknown: neither NVML nor sysfs names a node",
    }


def numa_plan(nodes: Any, gpu_node: int | None) -> tuple[dict[str, Any] | None, str]:
    """({near, far, near_cpus, far_cpus}, why) for a near/far comparison, or (None, why not)."""
    if not isinstance(nodes, list):
        return None, f"host NUMA nodes unreadable: {nodes['unavailable']}"
    with_cpus = [n for n in nodes if parse_cpulist(n["cpulist"])]
    if len(with_cpus) < 2:
        return None, f"the host has {len(with_cpus)} NUMA node(s) with CPUs: no far node to copy from"
    if gpu_node is None:
        return None, "the GPU's NUMA node is unknown (NVML and sysfs name none): near and far cannot be told apart"
    near = next((n for n in with_cpus if n["node"] == gpu_node), None)
    if near is None:
        return None, f"the GPU's node {gpu_node} has no CPUs to run the near copy from"
    far = next(n for n in with_cpus if n["node"] != gpu_node)
    return (
        {"near": near["node"], "far": far["node"], "near_cpus": near["cpulist"], "far_cpus": far["cpulist"]},
        f"near node {near['node']} (the GPU's), far node {far['node']}",
    )


def page_nodes(address: int, nbytes: int, machine: str | None = None) -> Any:
    """Nodes of PAGES_CHECKED pages spread over [address, address + nbytes), via move_pages(2)."""
    number = MOVE_PAGES_SYSCALL.get(machine or platform.machine())
    if number is None:
        return unavailable(f"move_pages syscall number unknown for {machine or platform.machine()}")
    count = max(1, min(PAGES_CHECKED, nbytes // PAGE_BYTES))
    step = max(PAGE_BYTES, (nbytes // count) // PAGE_BYTES * PAGE_BYTES)
    pages = (ctypes.c_void_p * count)(*[address + i * step for i in range(count)])
    status = (ctypes.c_int * count)()
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(
        ctypes.c_long(number), ctypes.c_int(0), ctypes.c_ulong(count), pages, None, status, ctypes.c_int(0)
    )
    if result != 0:
        return unavailable(f"move_pages failed: {os.strerror(ctypes.get_errno())}")
    return sorted({int(s) for s in status})


class NodeBuffer:
    """A registered (page-locked) host buffer whose pages were first touched on one NUMA node."""

    def __init__(self, torch: Any, nbytes: int, node: int, cpulist: str) -> None:
        self.torch, self.nbytes, self.node, self.cpulist = torch, nbytes, node, cpulist
        self.cpus = parse_cpulist(cpulist)
        self.tensor: Any = None
        self.pages: Any = None

    def __enter__(self) -> NodeBuffer:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.cpus)  # this thread only: placement follows the toucher
        try:
            self.tensor = self.torch.empty(self.nbytes, dtype=self.torch.uint8)
            ctypes.memset(self.tensor.data_ptr(), 0xA5, self.nbytes)  # one thread touches every page
        finally:
            os.sched_setaffinity(0, before)
        error = self.torch.cuda.cudart().cudaHostRegister(self.tensor.data_ptr(), self.nbytes, 0)
        if int(error) != 0:
            raise RuntimeError(f"cudaHostRegister failed: {self.torch.cuda.cudart().cudaGetErrorString(error)}")
        self.pages = page_nodes(self.tensor.data_ptr(), self.nbytes)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.tensor is not None:
            self.torch.cuda.cudart().cudaHostUnregister(self.tensor.data_ptr())

    def placement(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "first_touch_cpus": self.cpulist,
            "pages_checked_on_nodes": self.pages,
            "how": "thread pinned to the node's CPUs, buffer first touched by one memset, then cudaHostRegister",
        }
