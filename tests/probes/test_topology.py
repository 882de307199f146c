"""harness/analysis/topology.py: `nvidia-smi topo -m` parsing on real outputs.

The H200 capture (tests/fixtures/h200/) as the health probe keeps it, and the matrices of
tests/fixtures/allreduce/ (tab-separated, and pasted with runs of spaces) the all-reduce
probe reads its GPU pairs from.
"""

from pathlib import Path

import pytest

from harness.analysis.topology import device_columns, gpu_links, gpu_pairs, link_kind, parse_topo_matrix, strip_ansi
from harness.probes.topology import topology_from_output
from tests.h200_capture import topo_text

ALLREDUCE_FIXTURES = Path(__file__).parents[1] / "fixtures" / "allreduce"


def read(name):
    return parse_topo_matrix((ALLREDUCE_FIXTURES / name).read_text())


def test_real_h200_capture_parses_with_ansi_stripped():
    raw = topo_text()
    assert "\x1b[4m" in raw  # the capture really has the underline escapes
    matrix = parse_topo_matrix(raw)
    assert matrix["columns"] == ["GPU0", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert matrix["rows"] == {"GPU0": {"GPU0": "X", "CPU Affinity": "0-15", "NUMA Affinity": "0", "GPU NUMA ID": "N/A"}}
    assert matrix["legend"]["NV#"] == "Connection traversing a bonded set of # NVLinks"
    assert matrix["legend"]["X"] == "Self"
    assert gpu_links(matrix, "GPU0") == {}


def test_raw_text_is_kept_without_escapes():
    topology = topology_from_output(0, topo_text().encode(), b"")
    assert topology["raw_text"] == strip_ansi(topo_text())
    assert "\x1b" not in topology["raw_text"]
    assert topology["matrix"]["row_order"] == ["GPU0"]


def test_multi_gpu_layout_with_nics():
    """Constructed in nvidia-smi's layout (double tab before GPU NUMA ID, short NIC rows)."""
    text = (
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tSYS\t48-95\t1\t\tN/A\n"
        "NIC0\tPIX\tSYS\t X \n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n"
    )
    matrix = parse_topo_matrix(text)
    assert matrix["rows"]["GPU1"]["CPU Affinity"] == "48-95"
    assert matrix["rows"]["GPU1"]["GPU NUMA ID"] == "N/A"
    assert gpu_links(matrix, "GPU0") == {"GPU1": "NV18", "NIC0": "PIX"}
    assert matrix["rows"]["NIC0"] == {"GPU0": "PIX", "GPU1": "SYS", "NIC0": "X"}
    assert matrix["nic_legend"] == {"NIC0": "mlx5_0"}


def test_failed_command_keeps_its_reason():
    topology = topology_from_output(
        9, b"", b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    assert "exited with code 9" in topology["matrix"]["unavailable"]
    assert "couldn't communicate" in topology["matrix"]["unavailable"]


def test_text_without_a_matrix_is_rejected():
    with pytest.raises(ValueError, match="GPU0"):
        parse_topo_matrix("No devices were found\n")


def test_one_gpu_h200_capture_with_escape_codes():
    parsed = read("nvidia-smi-topo-m.h200-1gpu.txt")
    assert device_columns(parsed) == ["GPU0"]
    assert parsed["rows"]["GPU0"]["GPU0"] == "X"
    assert parsed["rows"]["GPU0"]["CPU Affinity"] == "0-15"
    assert gpu_pairs(parsed, [0]) == {}


def test_eight_h100_nvswitch_matrix_pasted_with_spaces():
    text = (ALLREDUCE_FIXTURES / "nvidia-smi-topo-m.8xh100-nv18.txt").read_text()
    assert "\t" not in text  # the fixture really is the space-separated paste
    parsed = parse_topo_matrix(text)
    assert device_columns(parsed) == [f"GPU{i}" for i in range(8)]
    assert parsed["rows"]["GPU3"]["GPU5"] == "NV18"
    assert parsed["rows"]["GPU4"]["CPU Affinity"] == "48-95,144-191"
    assert parsed["rows"]["GPU4"]["GPU NUMA ID"] == "N/A"
    assert gpu_pairs(parsed, [0, 1, 2, 3]) == {f"GPU{a}-GPU{b}": "NV18" for a in range(4) for b in range(a + 1, 4)}
    assert link_kind("NV18") == {"kind": "nvlink", "links": 18}


def test_pcie_only_matrices_with_nic_columns_and_tabs():
    parsed = read("nvidia-smi-topo-m.8x4090-sys-nic.txt")
    assert device_columns(parsed)[-2:] == ["NIC0", "NIC1"]
    assert parsed["rows"]["GPU6"]["NIC0"] == "PHB"
    assert parsed["rows"]["NIC1"]["NIC0"] == "PIX"
    assert link_kind("SYS") == {"kind": "pcie", "path": "SYS"}
    two = read("nvidia-smi-topo-m.2x5090-phb.txt")
    assert gpu_pairs(two, [0, 1]) == {"GPU0-GPU1": "PHB"}


def test_link_kinds_beyond_nvlink_and_pcie():
    assert link_kind("X") == {"kind": "self"}
    assert link_kind("N/A") == {"kind": "unknown", "cell": "N/A"}
