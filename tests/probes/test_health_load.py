"""The --under-load orchestration (threads, halfway reading, sample window, pids) on CPU.

CUDA cannot run here, so `FakeTorch` stands in for the few torch calls the load makes and
records them; NVML answers come from the recorded H200 load capture. What this cannot show
(real kernels, real clocks) is listed for the GPU run in docs/health.md.
"""

import contextlib
import os
import time

import pytest

from harness.analysis.health.diff import load_window_samples
from harness.probes.health.load import plan, run_load
from tests.h200_capture import nvidia_smi_xml


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.at = None

    def record(self):
        self.at = time.monotonic()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.at - self.at) * 1000.0


class FakeCuda:
    Event = FakeEvent

    def __init__(self, calls):
        self.calls = calls

    def mem_get_info(self, device):
        return 100 << 30, 141 << 30

    @contextlib.contextmanager
    def device(self, device):
        yield

    def synchronize(self, device=None):
        self.calls.append("synchronize")


class FakeTensor:
    def __init__(self, calls):
        self.calls = calls

    def copy_(self, other):
        self.calls.append("copy")


class FakeTorch:
    bfloat16, float32 = "bfloat16", "float32"

    def __init__(self):
        self.calls = []
        self.cuda = FakeCuda(self.calls)

    def device(self, kind, index):
        return (kind, index)

    def randn(self, *shape, **kw):
        return FakeTensor(self.calls)

    empty = ones = randn

    def empty_like(self, t):
        return FakeTensor(self.calls)

    def matmul(self, a, b, out):
        self.calls.append("matmul")
        time.sleep(0.001)


def test_load_runs_samples_and_reads_halfway():
    torch, nvml = FakeTorch(), nvidia_smi_xml("nvidia-smi-q.load.xml")
    halfway = []
    load, middle = run_load(torch, nvml, [(0, 0, 0)], 0.4, 0.05, lambda: halfway.append(time.monotonic()) or "reading")
    assert middle == "reading"
    assert load["started_monotonic_s"] + 0.15 < halfway[0] < load["finished_monotonic_s"] - 0.15
    assert load["pids"] == [os.getpid()]
    record = load["devices"][0]
    assert record["gemm_n"] == 8192 and record["rounds"] > 10
    assert record["gemm_flop"] == 2 * 8192**3 * record["rounds"]
    assert torch.calls.count("matmul") == record["rounds"] + 1  # + the warm-up round
    assert torch.calls.count("copy") == record["rounds"] + 1
    inside = load_window_samples({"load": load}, 0)
    assert len(inside) >= 4 and len(record["samples"]) == len(inside) + 1  # closing sample left out
    assert inside[0]["sm_clock_mhz"] == 1365 and inside[0]["clock_event_reasons"] == ["sw_power_cap"]


def test_a_failing_load_is_raised_not_hidden():
    torch, nvml = FakeTorch(), nvidia_smi_xml("nvidia-smi-q.load.xml")
    rounds = []

    def broken(a, b, out):
        rounds.append(1)
        if len(rounds) > 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    torch.matmul = broken
    try:
        run_load(torch, nvml, [(0, 0, 0)], 0.3, 0.05, lambda: None)
    except RuntimeError as exc:
        assert "illegal memory access" in str(exc)
    else:
        raise AssertionError("the load's error was swallowed")


def test_plan_sizes_to_free_memory():
    assert plan(140 << 30) == {"gemm_n": 8192, "copy_bytes": 1 << 30}
    assert plan(2 << 30) == {"gemm_n": 4096, "copy_bytes": 256 << 20}
    assert plan(256 << 20)["gemm_n"] == 2048


class CapturedSession:
    """NvmlSession stand-in: the recorded H200 answers behind the probe's own code."""

    def __init__(self, nvml):
        self.pynvml, self.reason, self.ok = nvml, None, True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def handles(self):
        return [0]


def recorded_view(nvml, torch_imported: bool) -> dict:
    """What torch (or, torch-free, its files and the driver API) answered on the lent H200, with the
    captured card's UUID."""
    from harness.probes.health import torch_view as _health_torch
    from tests.h200_capture import BASELINE_SOFTWARE

    view = {k: v for k, v in BASELINE_SOFTWARE.items() if k != "nvidia_ml_py_version"}
    view.update(
        torch_device_count=1,
        torch_devices=[
            {
                "torch_index": 0,
                "name": "NVIDIA H200",
                "uuid": nvml.answers["nvmlDeviceGetUUID"].removeprefix("GPU-"),
                "pci_bus_id": "00000000:00:06.0",
                "total_memory_mib": 143771.0,
                "compute_capability": "9.0",
                "multiprocessor_count": 132,
            }
        ],
        torch_imported=torch_imported,
        device_view_source=_health_torch.DEVICE_VIEW_SOURCE,
        torch_version_source=_health_torch.VERSION_SOURCE,
    )
    return view


def test_probe_gpu_path_end_to_end_on_recorded_answers(monkeypatch):
    """measure() with NVML, torch and nvidia-smi answering as the H200 did (load capture)."""
    from harness.probes import health
    from harness.probes.health import load as _health_load
    from harness.probes.topology import topology_from_output
    from harness.schemas import violations
    from tests.h200_capture import topo_text

    nvml = nvidia_smi_xml("nvidia-smi-q.load.xml")
    torch_view = recorded_view(nvml, torch_imported=True)
    monkeypatch.setattr(health, "NvmlSession", lambda: CapturedSession(nvml))
    monkeypatch.setattr(health, "torch_facts", lambda: torch_view)
    monkeypatch.setattr(
        health.TopologyCapture,
        "start",
        classmethod(
            lambda cls: type("Done", (), {"result": lambda self: topology_from_output(0, topo_text().encode(), b"")})()
        ),
    )
    monkeypatch.setattr(health, "run_load", lambda torch, *a: _health_load.run_load(FakeTorch(), *a))
    # the recorded load's process (pid 417) is this probe's own
    monkeypatch.setattr(os, "getpid", lambda: 417)

    document = health.measure(health.build_parser().parse_args(["--under-load", "0.4", "--sample-interval", "0.05"]))
    document.update(
        probe="health",
        contract_version=1,
        argv=[],
        started_at="2026-11-29T14:22:05.000000Z",
        finished_at="2026-11-29T14:22:06.000000Z",
    )
    assert violations("health", document) == []
    device = document["devices"][0]
    assert device["torch_index"] == 0 and document["device_mapping"][0]["matched_by"] == "uuid"
    assert device["sku"]["id"] == "h200-sxm-141gb"
    assert device["processes"][0]["started_by_harness"] is True
    assert {c["name"]: c["status"] for c in document["contracts"]}["no_foreign_process"] == "pass"
    assert document["load"]["devices"][0]["samples"]
    assert "n=8192" in document["sizing"]


def test_a_reading_during_another_process_load_names_its_pids_and_imports_no_torch(monkeypatch):
    """--during-load (what `dossier run` takes halfway through the stress step): the recorded load's
    process (pid 417, a bf16 GEMM loop) is the other process; the probe samples and reads, runs nothing."""
    from harness.analysis.health.diff import diff
    from harness.probes import health
    from harness.probes.topology import topology_from_output
    from harness.schemas import violations
    from tests.h200_capture import topo_text

    nvml = nvidia_smi_xml("nvidia-smi-q.load.xml")
    view = recorded_view(nvml, torch_imported=False)
    monkeypatch.setattr(health, "NvmlSession", lambda: CapturedSession(nvml))
    monkeypatch.setattr(health, "software_facts", lambda: view)
    monkeypatch.setattr(health, "torch_facts", lambda: pytest.fail("torch was imported"))
    monkeypatch.setattr(health, "run_load", lambda *a: pytest.fail("a load of its own ran"))
    monkeypatch.setattr(
        health.TopologyCapture,
        "start",
        classmethod(
            lambda cls: type("Done", (), {"result": lambda self: topology_from_output(0, topo_text().encode(), b"")})()
        ),
    )

    args = [
        "--during-load",
        "417",
        "--load-window",
        "0.4",
        "--sample-interval",
        "0.05",
        "--load-what",
        "the stress step's bf16 GEMM 8192x8192x16384 back to back on every GPU, at 30 s of 60",
    ]
    document = health.measure(health.build_parser().parse_args(args))
    document.update(
        probe="health",
        contract_version=4,
        argv=args,
        started_at="2026-12-01T14:22:05.000000Z",
        finished_at="2026-12-01T14:22:06.000000Z",
    )
    assert violations("health", document) == []
    load = document["load"]
    assert document["mode"] == "under_load" and load["observed"] is True and load["pids"] == [417]
    assert load["kind"].startswith("observed, not run by this probe: the stress step's bf16 GEMM")
    assert len(load["devices"][0]["samples"]) >= 4 and "torch is not imported" in document["sizing"]
    monkeypatch.setattr(health, "NvmlSession", lambda: CapturedSession(nvidia_smi_xml("nvidia-smi-q.idle.xml")))
    idle = health.measure(health.build_parser().parse_args([]))  # the same card, idle (the idle capture)
    checks = {c["name"]: c for c in diff(idle, document)["checks"]}
    assert checks["load_ran"]["status"] == "pass" and "pids [417]" in checks["load_ran"]["evidence"]
    assert checks["clocks_rose"]["status"] == "pass" and checks["no_unexpected_process"]["status"] == "pass"


def test_during_load_and_under_load_are_one_or_the_other():
    from harness.probes import health
    from harness.probes.contract import ProbeUsageError

    with pytest.raises(ProbeUsageError, match="not both"):
        health.check_args(health.build_parser().parse_args(["--during-load", "1", "--under-load", "4"]))
