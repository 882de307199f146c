"""`nvidia-smi topo -m` parsing on the real H200 capture."""

import pytest

from harness.analysis.topology import gpu_links, parse_topo_matrix, strip_ansi
from harness.probes._health_topology import topology_from_output
from tests.h200_capture import topo_text


def test_real_h200_capture_parses_with_ansi_stripped():
    raw = topo_text()
    assert "\x1b[4m" in raw  # the capture really has the underline escapes
    matrix = parse_topo_matrix(raw)
    assert matrix["columns"] == ["GPU0", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert matrix["rows"] == {"GPU0": {"GPU0": "X", "CPU Affinity": "0-15", "NUMA Affinity": "0",
                                       "GPU NUMA ID": "N/A"}}
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
    text = ("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A\n"
            "GPU1\tNV18\t X \tSYS\t48-95\t1\t\tN/A\n"
            "NIC0\tPIX\tSYS\t X \n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n")
    matrix = parse_topo_matrix(text)
    assert matrix["rows"]["GPU1"]["CPU Affinity"] == "48-95"
    assert matrix["rows"]["GPU1"]["GPU NUMA ID"] == "N/A"
    assert gpu_links(matrix, "GPU0") == {"GPU1": "NV18", "NIC0": "PIX"}
    assert matrix["rows"]["NIC0"] == {"GPU0": "PIX", "GPU1": "SYS", "NIC0": "X"}
    assert matrix["nic_legend"] == {"NIC0": "mlx5_0"}


def test_failed_command_keeps_its_reason():
    topology = topology_from_output(9, b"", b"NVIDIA-SMI has failed because it couldn't communicate "
                                            b"with the NVIDIA driver.")
    assert "exited with code 9" in topology["matrix"]["unavailable"]
    assert "couldn't communicate" in topology["matrix"]["unavailable"]


def test_text_without_a_matrix_is_rejected():
    with pytest.raises(ValueError):
        parse_topo_matrix("No devices were found\n")
