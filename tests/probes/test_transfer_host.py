"""The host side of transfers: NUMA nodes and a GPU's node from sysfs trees written here, NVML's
recorded NotSupported (the lent H200), the near/far plan, and move_pages on a real buffer."""

import ctypes

import pytest

from harness.probes.transfer import host
from tests.h200_capture import nvml_fields


def sysfs_nodes(root, nodes):
    for node, cpulist in nodes.items():
        (root / f"node{node}").mkdir(parents=True)
        (root / f"node{node}" / "cpulist").write_text(cpulist + "\n")
    (root / "possible").write_text("0-1\n")  # files beside the node folders are not nodes
    return root


def test_cpulists_and_bus_ids_are_read_as_the_kernel_writes_them():
    assert host.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert host.parse_cpulist("") == []
    assert host.sysfs_bus_id("00000000:00:06.0") == "0000:00:06.0"
    assert host.sysfs_bus_id("00000001:AB:00.0") == "0001:ab:00.0"


def test_host_nodes_from_sysfs(tmp_path):
    root = sysfs_nodes(tmp_path, {0: "0-47,96-143", 1: "48-95,144-191"})
    assert host.host_nodes(root) == [{"node": 0, "cpulist": "0-47,96-143"}, {"node": 1, "cpulist": "48-95,144-191"}]
    assert "no node* folders" in host.host_nodes(tmp_path / "absent")["unavailable"]


def test_the_h200s_nvml_notsupported_falls_back_to_sysfs(tmp_path):
    nvml = nvml_fields("nvml-fields.idle.json")  # the lent H200: nvmlDeviceGetNumaNodeId is NotSupported
    (tmp_path / "0000:00:06.0").mkdir()
    (tmp_path / "0000:00:06.0" / "numa_node").write_text("1\n")
    found = host.gpu_numa(nvml, "handle", "00000000:00:06.0", tmp_path)
    assert found["nvml_numa_node_id"] == {"unavailable": "NVMLError_NotSupported: Not Supported"}
    assert found["node"] == 1 and found["source"].startswith("sysfs")


def test_a_device_without_a_node_says_so(tmp_path):
    (tmp_path / "0000:00:06.0").mkdir()
    (tmp_path / "0000:00:06.0" / "numa_node").write_text("-1\n")
    found = host.gpu_numa(nvml_fields("nvml-fields.idle.json"), "handle", "00000000:00:06.0", tmp_path)
    assert found["node"] is None and "gives this device no NUMA node" in found["sysfs_numa_node"]["unavailable"]


@pytest.mark.parametrize(
    "nodes, gpu_node, expect",
    [
        ({0: "0-15"}, 0, "the host has 1 NUMA node(s) with CPUs: no far node"),
        ({0: "0-7", 1: "8-15"}, None, "the GPU's NUMA node is unknown"),
        ({0: "0-7", 1: ""}, 0, "the host has 1 NUMA node(s) with CPUs"),
    ],
)
def test_no_near_far_plan_without_two_nodes_and_a_known_gpu_node(tmp_path, nodes, gpu_node, expect):
    plan, why = host.numa_plan(host.host_nodes(sysfs_nodes(tmp_path, nodes)), gpu_node)
    assert plan is None and why.startswith(expect)


def test_near_is_the_gpus_node_and_far_another(tmp_path):
    plan, why = host.numa_plan(host.host_nodes(sysfs_nodes(tmp_path, {0: "0-7", 1: "8-15"})), 1)
    assert plan == {"near": 1, "far": 0, "near_cpus": "8-15", "far_cpus": "0-7"}
    assert why == "near node 1 (the GPU's), far node 0"


def test_move_pages_names_the_node_of_a_real_touched_buffer():
    size = 64 * host.PAGE_BYTES
    buffer = ctypes.create_string_buffer(size)
    ctypes.memset(buffer, 1, size)
    found = host.page_nodes(ctypes.addressof(buffer), size)
    if isinstance(found, dict):  # an architecture without a known syscall number says so
        assert "syscall number unknown" in found["unavailable"] or "move_pages failed" in found["unavailable"]
    else:
        assert found and all(isinstance(node, int) and node >= 0 for node in found)
    assert "unknown for sparc" in host.page_nodes(ctypes.addressof(buffer), size, machine="sparc")["unavailable"]
