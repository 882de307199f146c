"""harness/probes/interconnect.py: the all-reduce probe's topology evidence, built from the health
probe's topo -m capture, on a real 8-GPU NVSwitch matrix (tests/fixtures/allreduce/)."""

from pathlib import Path

import jsonschema

from harness.probes import interconnect
from harness.probes.topology import topology_from_output
from harness.schemas import _registry, schema_id

FIXTURE = Path(__file__).parents[1] / "fixtures" / "allreduce" / "nvidia-smi-topo-m.8xh100-nv18.txt"


def validate_topology(evidence):
    schema = {"$ref": schema_id("allreduce") + "#/$defs/topology"}
    jsonschema.Draft202012Validator(schema, registry=_registry()).validate(evidence)


def captured(returncode, out, err=b""):
    done = topology_from_output(returncode, out, err)
    return classmethod(lambda cls: type("Done", (), {"result": lambda self: done})())


def test_gather_reads_gpu_pairs_from_the_health_capture(monkeypatch):
    monkeypatch.setattr(interconnect.TopologyCapture, "start", captured(0, FIXTURE.read_bytes()))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    evidence = interconnect.gather(3)
    assert evidence["gpu_indices"] == [0, 1, 2]
    assert evidence["gpu_pairs"] == {"GPU0-GPU1": "NV18", "GPU0-GPU2": "NV18", "GPU1-GPU2": "NV18"}
    assert evidence["nvidia_smi_topo"]["command"] == ["nvidia-smi", "topo", "-m"]
    validate_topology(evidence)


def test_a_failed_topo_command_leaves_its_reason_on_the_pairs(monkeypatch):
    monkeypatch.setattr(
        interconnect.TopologyCapture,
        "start",
        captured(9, b"", b"NVIDIA-SMI has failed because it couldn't communicate"),
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    evidence = interconnect.gather(2)
    assert evidence["gpu_indices"] == [1, 0]
    assert "exited with code 9" in evidence["gpu_pairs"]["unavailable"]
    validate_topology(evidence)
