"""harness/analysis/topo_matrix.py on real `nvidia-smi topo -m` outputs (tests/fixtures/allreduce/)."""

from pathlib import Path

import pytest

from harness.analysis import topo_matrix

FIXTURES = Path(__file__).parent / "fixtures" / "allreduce"


def read(name):
    return topo_matrix.parse((FIXTURES / name).read_text())


def test_one_gpu_h200_capture_with_escape_codes():
    parsed = read("nvidia-smi-topo-m.h200-1gpu.txt")
    assert parsed["devices"] == ["GPU0"]
    assert parsed["links"] == {"GPU0": {"GPU0": "X"}}
    assert parsed["affinity"]["GPU0"]["CPU Affinity"] == "0-15"
    assert topo_matrix.gpu_pairs(parsed, [0]) == {}


def test_eight_h100_nvswitch_matrix_pasted_with_spaces():
    parsed = read("nvidia-smi-topo-m.8xh100-nv18.txt")
    assert parsed["devices"] == [f"GPU{i}" for i in range(8)]
    assert parsed["links"]["GPU3"]["GPU5"] == "NV18"
    assert parsed["affinity"]["GPU4"]["CPU Affinity"] == "48-95,144-191"
    assert topo_matrix.gpu_pairs(parsed, [0, 1, 2, 3]) == {f"GPU{a}-GPU{b}": "NV18"
                                                            for a in range(4) for b in range(a + 1, 4)}
    assert topo_matrix.link_kind("NV18") == {"kind": "nvlink", "links": 18}


def test_pcie_only_matrices_with_nic_columns_and_tabs():
    parsed = read("nvidia-smi-topo-m.8x4090-sys-nic.txt")
    assert parsed["devices"][-2:] == ["NIC0", "NIC1"]
    assert parsed["links"]["GPU6"]["NIC0"] == "PHB"
    assert parsed["links"]["NIC1"]["NIC0"] == "PIX"
    assert topo_matrix.link_kind("SYS") == {"kind": "pcie", "path": "SYS"}
    two = read("nvidia-smi-topo-m.2x5090-phb.txt")
    assert topo_matrix.gpu_pairs(two, [0, 1]) == {"GPU0-GPU1": "PHB"}


def test_text_without_a_matrix_is_refused():
    with pytest.raises(ValueError, match="GPU0"):
        topo_matrix.parse("No devices were found\n")
