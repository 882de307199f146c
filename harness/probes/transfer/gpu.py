"""The transfer measurements on GPUs: per GPU host copies (pinned and pageable, each direction
alone and both at once), the device-local copy, near and far NUMA node; across GPUs the peer
matrix (write and read, alone and both ways) and every GPU copying to and from the host at once.

torch is passed in; buffers are allocated once at the largest size and every smaller copy uses
their first bytes.
"""

from __future__ import annotations

import ctypes
from itertools import combinations, permutations
from typing import Any

from harness.probes.contract import progress, unavailable
from harness.probes.cuda_driver import load as load_driver
from harness.probes.devices import pcie_facts
from harness.probes.transfer.copies import Stream, Timer, sweep_alone, sweep_together
from harness.probes.transfer.document import COPY_PATHS, group_record, series_record
from harness.probes.transfer.host import NodeBuffer, numa_plan

UNDER_COPY_COPIES = 8  # pinned host-to-device copies of the largest size queued while NVML reads the link
DIRECTIONS = (("host_to_device", "h2d"), ("device_to_host", "d2h"))
FILL_HOST, FILL_DEVICE = 0xA5, 0x5A  # every page touched; links do not compress, so the value is immaterial


class GpuBuffers:
    """Per GPU: two device buffers, its own pinned pair; one shared pageable pair for all GPUs."""

    def __init__(self, torch: Any, index: int, nbytes: int, pageable: tuple[Any, Any]) -> None:
        u8 = torch.uint8
        self.dev_a = torch.empty(nbytes, dtype=u8, device=f"cuda:{index}").fill_(FILL_DEVICE)
        self.dev_b = torch.empty(nbytes, dtype=u8, device=f"cuda:{index}").fill_(FILL_DEVICE)
        self.host = {
            "pinned": (
                torch.empty(nbytes, dtype=u8, pin_memory=True).fill_(FILL_HOST),
                torch.empty(nbytes, dtype=u8, pin_memory=True),
            ),
            "pageable": pageable,
        }
        self.main = torch.cuda.Stream(device=index)
        self.side = torch.cuda.Stream(device=index)


def copy_into(dst: Any, src: Any) -> Any:
    return lambda n: dst[:n].copy_(src[:n], non_blocking=True)


def driver_pull(driver: Any, device: int, dst_ptr: int, src_ptr: int, stream_handle: int) -> Any:
    """cuMemcpyAsync on the destination GPU's stream, its primary context (torch's) made current first."""
    ordinal, context = ctypes.c_int(), ctypes.c_void_p()
    driver.call("cuDeviceGet", ctypes.byref(ordinal), device)
    driver.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), ordinal)

    def pull(n: int) -> None:
        driver.call("cuCtxSetCurrent", context)
        driver.call(
            "cuMemcpyAsync",
            ctypes.c_uint64(dst_ptr),
            ctypes.c_uint64(src_ptr),
            ctypes.c_size_t(n),
            ctypes.c_void_p(stream_handle),
        )

    return pull


class GpuRun:
    """Measures every series and group; `series`, `groups` and `limitations` collect the results."""

    def __init__(
        self, torch: Any, gpus: list[int], sizes: list[int], large: list[int], budget_s: float, skip: set[str]
    ) -> None:
        self.torch, self.gpus, self.sizes, self.large, self.budget, self.skip = (
            torch,
            gpus,
            sizes,
            large,
            budget_s,
            skip,
        )
        self.series: list[dict[str, Any]] = []
        self.groups: list[dict[str, Any]] = []
        self.limitations: list[dict[str, str]] = []
        self.buffers: dict[int, GpuBuffers] = {}
        self.step, self.total = 0, 0

    def allocate(self) -> None:
        torch, largest = self.torch, max(self.sizes)
        pageable = (
            torch.empty(largest, dtype=torch.uint8).fill_(FILL_HOST),
            torch.empty(largest, dtype=torch.uint8).fill_(0),
        )
        for index in self.gpus:
            self.buffers[index] = GpuBuffers(torch, index, largest, pageable)

    def tick(self, what: str) -> None:
        progress(self.step, self.total, what)
        self.step += 1

    def alone(
        self, sid: str, member: Stream, sizes: list[int], direction: str, memory: str, path: str, **fields: Any
    ) -> None:
        self.tick(sid)
        points = sweep_alone(self.torch, member, sizes, self.budget)
        self.series.append(series_record(sid, direction, memory, path, points, **fields))

    def together(
        self,
        gid: str,
        kind: str,
        what: str,
        members: list[tuple[Stream, dict[str, Any]]],
        sizes: list[int],
        same_clock: bool,
    ) -> None:
        self.tick(gid)
        streams = [m for m, _ in members]
        points, per_size = sweep_together(self.torch, streams, sizes, self.budget, same_clock)
        for member, fields in members:
            path = fields.pop("issued_by")
            direction, memory = fields.pop("direction"), fields.pop("memory")
            self.series.append(
                series_record(member.series_id, direction, memory, path, points[member.series_id], group=gid, **fields)
            )
        self.groups.append(group_record(gid, kind, what, [m.series_id for m in streams], same_clock, per_size))

    # --- one GPU ------------------------------------------------------------------------------

    def under_copy(self, index: int, pynvml: Any, handle: Any) -> tuple[Any, str]:
        """PCIe facts read while pinned host-to-device copies of the largest size are queued."""
        if handle is None:
            return unavailable("no NVML handle for this GPU"), "not read: no NVML handle"
        buffers, largest = self.buffers[index], max(self.sizes)
        timer = Timer(
            self.torch, Stream("link-reading", copy_into(buffers.dev_a, buffers.host["pinned"][0]), index, buffers.main)
        )
        issued = timer.issue(largest, UNDER_COPY_COPIES)
        facts = pcie_facts(pynvml, handle)
        times, _ = timer.collect(issued)
        return facts, (
            f"read while {UNDER_COPY_COPIES} pinned host-to-device copies of {largest} B were queued on "
            f"cuda:{index} ({sum(times) * 1e3:.1f} ms of copying)"
        )

    def host_copies(self, index: int) -> None:
        b = self.buffers[index]
        for memory in ("pinned", "pageable"):
            if memory in self.skip:
                continue
            src, dst = b.host[memory]
            path = COPY_PATHS["host_device"] + ("" if memory == "pinned" else "; " + COPY_PATHS["pageable"])
            h2d = Stream(f"gpu{index}/h2d/{memory}", copy_into(b.dev_a, src), index, b.main)
            d2h = Stream(f"gpu{index}/d2h/{memory}", copy_into(dst, b.dev_b), index, b.main)
            for member, (direction, _) in zip((h2d, d2h), DIRECTIONS, strict=True):
                self.alone(member.series_id, member, self.sizes, direction, memory, path, gpu=index)
            if "bidirectional" in self.skip:
                continue
            both = [
                (
                    Stream(f"gpu{index}/bidirectional/h2d/{memory}", copy_into(b.dev_a, src), index, b.main),
                    {
                        "direction": "host_to_device",
                        "memory": memory,
                        "issued_by": path,
                        "gpu": index,
                        "concurrency": "bidirectional",
                    },
                ),
                (
                    Stream(f"gpu{index}/bidirectional/d2h/{memory}", copy_into(dst, b.dev_b), index, b.side),
                    {
                        "direction": "device_to_host",
                        "memory": memory,
                        "issued_by": path,
                        "gpu": index,
                        "concurrency": "bidirectional",
                    },
                ),
            ]
            self.together(
                f"gpu{index}/bidirectional/{memory}",
                "host_bidirectional",
                f"host-to-device and device-to-host at once on GPU {index} ({memory}), one stream each",
                both,
                self.sizes,
                same_clock=True,
            )

    def device_local(self, index: int) -> None:
        b = self.buffers[index]
        self.alone(
            f"gpu{index}/local",
            Stream(f"gpu{index}/local", copy_into(b.dev_b, b.dev_a), index, b.main),
            self.sizes,
            "device_local",
            "device",
            COPY_PATHS["device_local"],
            gpu=index,
        )

    def numa(self, index: int, nodes: Any, gpu_node: int | None) -> bool:
        """Near and far node copies where the host has two nodes and the GPU's is known."""
        plan, why = numa_plan(nodes, gpu_node)
        if plan is None:
            self.limitations.append({"what": f"near and far NUMA node copies on GPU {index}", "why": why})
            return False
        b, largest = self.buffers[index], max(self.large)
        for placement in ("near", "far"):
            node, cpus = plan[placement], plan[f"{placement}_cpus"]
            with NodeBuffer(self.torch, largest, node, cpus) as src, NodeBuffer(self.torch, largest, node, cpus) as dst:
                for (direction, short), member in zip(
                    DIRECTIONS,
                    (
                        Stream(f"gpu{index}/numa-{placement}/h2d", copy_into(b.dev_a, src.tensor), index, b.main),
                        Stream(f"gpu{index}/numa-{placement}/d2h", copy_into(dst.tensor, b.dev_b), index, b.main),
                    ),
                    strict=True,
                ):
                    self.alone(
                        member.series_id,
                        member,
                        self.large,
                        direction,
                        "pinned",
                        COPY_PATHS["host_device"] + f"; host buffer on NUMA node {node} ({why})",
                        gpu=index,
                        numa_placement=placement,
                        host_buffer=(src if short == "h2d" else dst).placement(),
                    )
        return True

    # --- across GPUs --------------------------------------------------------------------------

    def peer_stream(self, sid: str, mode: str, src: int, dst: int, driver: Any, nbuf: str = "dev_a") -> Stream:
        s, d = self.buffers[src], self.buffers[dst]
        src_t, dst_t = getattr(s, nbuf), getattr(d, nbuf)
        if mode == "write":
            return Stream(sid, copy_into(dst_t, src_t), src, s.main, also_current=[d.side])
        return Stream(
            sid, driver_pull(driver, dst, dst_t.data_ptr(), src_t.data_ptr(), d.main.cuda_stream), dst, d.main
        )

    def enable_peer_access(self, access: dict[str, Any]) -> None:
        """One small torch copy each granted way: torch enables peer access (cudaDeviceEnablePeerAccess)
        for the copying GPU, which the driver's reads then use too."""
        for a, b in permutations(self.gpus, 2):
            if access.get(f"{a}->{b}") is True:
                self.buffers[b].dev_a[:1].copy_(self.buffers[a].dev_a[:1])
        for index in self.gpus:
            self.torch.cuda.synchronize(index)

    def peers(self, access: dict[str, Any]) -> None:
        driver, loaded = load_driver()
        if driver is None:
            self.limitations.append(
                {
                    "what": "peer reads (the destination GPU's copy engine pulling)",
                    "why": loaded["cuda_driver_library"]["unavailable"],
                }
            )
        self.enable_peer_access(access)
        for a, b in permutations(self.gpus, 2):
            for mode, needs in (("write", f"{a}->{b}"), ("read", f"{b}->{a}")):
                if access.get(needs) is not True or (mode == "read" and driver is None):
                    continue
                sid = f"peer/{mode}/{a}->{b}"
                self.alone(
                    sid,
                    self.peer_stream(sid, mode, a, b, driver),
                    self.large,
                    "device_to_device_peer",
                    "device",
                    COPY_PATHS[f"peer_{mode}"],
                    src_gpu=a,
                    dst_gpu=b,
                    peer_mode=mode,
                )
        if "bidirectional" in self.skip:
            return
        for a, b in combinations(self.gpus, 2):
            if not (access.get(f"{a}->{b}") is True and access.get(f"{b}->{a}") is True):
                continue
            for mode in ("write", "read") if driver is not None else ("write",):
                gid = f"peer/bidirectional-{mode}/{a}<->{b}"
                members = [
                    (
                        self.peer_stream(f"{gid}/{x}->{y}", mode, x, y, driver, nbuf),
                        {
                            "direction": "device_to_device_peer",
                            "memory": "device",
                            "src_gpu": x,
                            "dst_gpu": y,
                            "peer_mode": mode,
                            "concurrency": "bidirectional",
                            "issued_by": COPY_PATHS[f"peer_{mode}"],
                        },
                    )
                    for x, y, nbuf in ((a, b, "dev_a"), (b, a, "dev_b"))
                ]
                self.together(
                    gid,
                    "peer_bidirectional",
                    f"GPU {a} and GPU {b} copying to each other at once ({mode})",
                    members,
                    self.large,
                    same_clock=False,
                )

    def all_at_once(self) -> None:
        for direction, short in DIRECTIONS:
            members = []
            for index in self.gpus:
                b = self.buffers[index]
                src, dst = b.host["pinned"]
                copy = copy_into(b.dev_a, src) if short == "h2d" else copy_into(dst, b.dev_b)
                members.append(
                    (
                        Stream(f"all-gpus/{short}/gpu{index}", copy, index, b.main),
                        {
                            "direction": direction,
                            "memory": "pinned",
                            "gpu": index,
                            "concurrency": "all_gpus",
                            "issued_by": COPY_PATHS["host_device"],
                        },
                    )
                )
            self.together(
                f"all-gpus/{short}",
                "all_gpus",
                f"every GPU copying {direction.replace('_', ' ')} at once (pinned), one stream and thread each",
                members,
                self.large,
                same_clock=False,
            )
