"""Transfer documents built by the probe's own code from real H200 captures (see tests/fixtures/README.md).

- GPU facts: `harness.probes.transfer.links.gpu_facts` reading a recorded NVML capture
  (`tests/h200_capture.py::nvml_fields`): the idle capture for the idle reading, the capture taken
  during a copy loop for the reading under copy (or its EDITED copy with the link width set to x8).
- Two GPUs: the real `dossier health` document of the two-H200 machine (tests/fixtures/h200x2/),
  whose per-device PCIe and NVLink facts fill the same fields, and a real `nvidia-smi topo -m`.
- Measurements: nvbandwidth v0.8's figures from h200-baseline.md (2xH200, one call, 2026-11-30).
  nvbandwidth reports the median of 3 samples of 16 copies of 512 MiB; each becomes one point of
  512 MiB whose one per-copy time is 512 MiB / that figure. One size: no plateau is claimed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.analysis.allreduce.figures import parse_size
from harness.probes.topology import topology_from_output
from harness.probes.transfer.copies import point
from harness.probes.transfer.document import COPY_PATHS, assemble, series_record
from harness.probes.transfer.links import gpu_facts, pair_topology
from tests.h200_capture import nvml_fields

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NVBANDWIDTH_BYTES = parse_size("512M")  # nvbandwidth v0.8 default --bufferSize
NOT_CAPTURED_SYSFS = Path("/sysfs-not-captured-with-the-h200-captures")
EDITED_X8 = "nvml-fields.copy-load.EDITED-pcie-width-x8.json"


def nvbandwidth_table() -> dict[str, list[float]]:
    """test name -> [GPU0, GPU1] GB/s from the baseline's nvbandwidth 2xH200 table."""
    text = (FIXTURES / "h200" / "h200-baseline.md").read_text()
    section = text[text.index("## nvbandwidth v0.8") :]
    rows = {}
    for match in re.finditer(
        r"^\| (\w+_ce|device_local_copy)(?: \(peer\))? \| ([\d.]+)(?: GB/s)? \| ([\d.]+) \|$", section, re.M
    ):
        rows[match.group(1)] = [float(match.group(2)), float(match.group(3))]
    return rows


class CapturedSession:
    """An NvmlSession over a recorded capture: one device, answered from the capture."""

    def __init__(self, capture: Any) -> None:
        self.pynvml, self.reason, self.ok = capture, None, True

    def handles(self) -> list[str]:
        return ["captured-device"]


def captured_gpu(under_copy: str = "nvml-fields.copy-load.json") -> dict[str, Any]:
    """gpu_facts from the idle capture, its under-copy reading from `under_copy`."""
    idle = nvml_fields("nvml-fields.idle.json")
    torch = SimpleNamespace(
        cuda=SimpleNamespace(
            get_device_properties=lambda i: SimpleNamespace(
                name=idle.answers["nvmlDeviceGetName"], uuid=idle.answers["nvmlDeviceGetUUID"]
            )
        )
    )
    facts, handle = gpu_facts(torch, CapturedSession(idle), 0, NOT_CAPTURED_SYSFS)
    loaded = gpu_facts(torch, CapturedSession(nvml_fields(under_copy)), 0, NOT_CAPTURED_SYSFS)[0]
    facts["pcie"]["under_copy"] = loaded["pcie"]["idle"]
    facts["pcie"]["under_copy_how"] = (
        f"recorded: tests/fixtures/h200/{under_copy}, read during a device-to-device "
        "copy loop on the lent H200 (2026-11-29)"
    )
    return facts


def nvbandwidth_point(gbps: float) -> list[dict[str, Any]]:
    return [point(NVBANDWIDTH_BYTES, [NVBANDWIDTH_BYTES / (gbps * 1e9)])]


def host_series(gpu: int, figures: dict[str, list[float]]) -> list[dict[str, Any]]:
    table = (
        ("host_to_device", "h2d", "host_to_device_memcpy_ce"),
        ("device_to_host", "d2h", "device_to_host_memcpy_ce"),
    )
    series = [
        series_record(
            f"gpu{gpu}/{short}/pinned",
            direction,
            "pinned",
            COPY_PATHS["host_device"],
            nvbandwidth_point(figures[test][gpu]),
            gpu=gpu,
        )
        for direction, short, test in table
    ]
    series.append(
        series_record(
            f"gpu{gpu}/local",
            "device_local",
            "device",
            COPY_PATHS["device_local"],
            nvbandwidth_point(figures["device_local_copy"][gpu]),
            gpu=gpu,
        )
    )
    return series


def recorded_timing() -> dict[str, Any]:
    return {
        "method": "cuda_events",
        "statistic": "nvbandwidth v0.8: median of 3 samples of 16 copies, stored as one per-copy time",
        "warmup_copies": 4,
        "point_budget_s": 0.0,
        "min_copies": 1,
        "max_copies": 1,
    }


def _assemble(
    gpus: list[dict[str, Any]], topology: Any, peer: dict[str, Any], series: list[dict[str, Any]], sizing: str
) -> dict[str, Any]:
    body = assemble(
        device="cuda",
        torch_version="2.11.0+cu130",
        sizes=[NVBANDWIDTH_BYTES],
        large_sizes=[NVBANDWIDTH_BYTES],
        timing=recorded_timing(),
        host={
            "cpu_name": "not captured",
            "numa_nodes": {"unavailable": "NotCaptured: host facts were not recorded with the H200 captures"},
        },
        gpus=gpus,
        topology=topology,
        peer=peer,
        all_gpus={"measured": False, "why": "not in the recorded figures"},
        numa={"measured": False, "why": "not in the recorded figures"},
        series=series,
        groups=[],
        limitations=[{"what": "recorded fixture", "why": "figures are nvbandwidth's, one size each"}],
        sizing=sizing,
    )
    return {
        "probe": "transfer",
        "contract_version": 1,
        "started_at": "2026-11-30T12:00:00.000000Z",
        "finished_at": "2026-11-30T12:00:01.000000Z",
        "argv": [],
        **body,
    }


def h200_document(under_copy: str = "nvml-fields.copy-load.json") -> dict[str, Any]:
    """One H200: NVML facts from the captures, pinned copies and device-local copy from nvbandwidth."""
    topo = topology_from_output(0, (FIXTURES / "h200" / "nvidia-smi-topo-m.txt").read_bytes(), b"")
    gpu = captured_gpu(under_copy)
    return _assemble(
        [gpu],
        pair_topology(topo, [gpu], {"unavailable": "1 GPU: no pairs"}),
        {"measured": False, "why": "1 GPU measured: a peer matrix needs 2", "access": {}},
        host_series(0, nvbandwidth_table()),
        f"recorded H200 captures ({under_copy}) and nvbandwidth",
    )


def h200x2_gpus() -> list[dict[str, Any]]:
    """The two H200s as the two-GPU machine's real health.json describes them."""
    health = json.loads((FIXTURES / "h200x2" / "health.json").read_text())
    allreduce = json.loads((FIXTURES / "h200x2" / "allreduce.json").read_text())
    versions = {d["index"]: d["nvlink_version"] for d in allreduce["topology"]["nvml"]["devices"]}
    gpus = []
    for i, device in enumerate(health["devices"]):
        active = sum(link["active"] for link in device["nvlink"])
        gpus.append(
            {
                "torch_index": i,
                "name": device["name"],
                "uuid": device["uuid"],
                "nvml_index": device["nvml_index"],
                "pci_bus_id": device["pci_bus_id"],
                "numa": {
                    "nvml_numa_node_id": device["numa_node_id"],
                    "sysfs_numa_node": {"unavailable": "NotCaptured: sysfs was not recorded"},
                    "node": None,
                    "source": "unknown: neither NVML nor sysfs names a node",
                },
                "pcie": {
                    "idle": device["pcie"],
                    "under_copy": device["pcie"],
                    "under_copy_how": "recorded: h200x2/health.json (idle; the same reading stands for both)",
                },
                "nvlink": {
                    "links": device["nvlink"],
                    "active_links": active,
                    "version_code": versions[device["nvml_index"]],
                    "version": "4.0",
                },
                "memory_spec_gbps": 4800,
                "memory_spec_source": "catalogue h200-sxm-141gb",
            }
        )
    return gpus


def two_gpu_document(
    topo_file: Path, access: bool | dict[str, Any], with_peer_copies: bool, nvml_p2p: Any = None
) -> dict[str, Any]:
    """Two H200s' facts on a real topo -m capture, with peer access as given."""
    gpus = h200x2_gpus()
    topo = topology_from_output(0, topo_file.read_bytes(), b"")
    grants = access if isinstance(access, dict) else {"0->1": access, "1->0": access}
    figures = nvbandwidth_table()
    series = host_series(0, figures) + host_series(1, figures)
    if with_peer_copies:
        for mode, test in (("write", "device_to_device_memcpy_write_ce"), ("read", "device_to_device_memcpy_read_ce")):
            for a, b in ((0, 1), (1, 0)):
                driver = a if mode == "write" else b  # nvbandwidth's row: the GPU whose copy engine drives
                series.append(
                    series_record(
                        f"peer/{mode}/{a}->{b}",
                        "device_to_device_peer",
                        "device",
                        COPY_PATHS[f"peer_{mode}"],
                        nvbandwidth_point(figures[test][driver]),
                        src_gpu=a,
                        dst_gpu=b,
                        peer_mode=mode,
                    )
                )
    refused = [k for k, v in grants.items() if v is not True]
    peer = {
        "measured": with_peer_copies,
        "access": grants,
        "why": "every pair has peer access" if not refused else f"no peer access for {', '.join(refused)}",
    }
    p2p = nvml_p2p if nvml_p2p is not None else {"GPU0-GPU1": {"nvlink": "ok", "read": "ok"}}
    return _assemble(gpus, pair_topology(topo, gpus, p2p), peer, series, f"two H200s on {topo_file.name}")
