"""The transfer probe end to end: a real run on the CPU in its own process (schema, recomputation,
tampering), its usage errors, its sizing, and its GPU code path on a CUDA stand-in (shape only)."""

import ctypes
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis.transfer import discrepancies, headlines
from harness.present.plots.transfer import render
from harness.probes import transfer as probe
from harness.probes.contract import ProbeUsageError
from harness.probes.nvml import NvmlSession
from harness.probes.transfer.gpu import driver_pull
from harness.schemas import violations
from tests.transfer_standin import standin_torch

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--device", "cpu", "--sizes", "4K", "64K", "1M", "--point-budget-s", "0.005"]


def run_probe(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.probes.transfer", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def cpu_document():
    done = run_probe(*FAST)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_cpu_run_is_schema_valid_and_recomputes_exactly(cpu_document):
    assert violations("transfer", cpu_document) == []
    assert discrepancies(cpu_document) == []
    assert cpu_document["device"] == "cpu" and cpu_document["sizes_bytes"] == [4096, 65536, 2**20]
    [series] = cpu_document["series"]
    assert series["direction"] == "host_to_host" and series["memory"] == "host"
    assert all(len(p["copy_times_s"]) == p["copies"] >= 5 for p in series["points"])
    assert series["link"]["kind"] == "host_memory" and series["link"]["ceiling_gbps"] is None


def test_a_cpu_run_plots_its_sweep_and_no_heatmap(cpu_document, tmp_path):
    paths = render(cpu_document, tmp_path / "transfer")
    assert sorted(p.name for p in paths) == ["transfer.png", "transfer.svg"]


def test_a_cpu_run_says_it_measured_host_memory_not_pcie(cpu_document):
    limits = {item["what"]: item["why"] for item in cpu_document["limitations"]}
    assert "not PCIe" in limits["PCIe transfers"]
    assert "host memory" in cpu_document["sizing"] and "CI" in cpu_document["sizing"]
    assert cpu_document["topology"] == {"unavailable": "device=cpu: no GPU"}
    assert headlines(cpu_document)["per_gpu"]["host"]["host_to_host_latency_us"] > 0


@pytest.mark.parametrize(
    "tamper, expected",
    [
        (
            lambda d: d["series"][0]["points"][-1].__setitem__(
                "copy_times_s", [2 * t for t in d["series"][0]["points"][-1]["copy_times_s"]]
            ),
            "gbps",
        ),
        (lambda d: d["series"][0]["points"][0].__setitem__("gbps", 123.0), "gbps: states 123.0"),
        (lambda d: d["series"][0]["latency"].__setitem__("median_us", 0.001), "latency.median_us"),
        (
            lambda d: d["series"][0]["plateau"].__setitem__("reached", not d["series"][0]["plateau"]["reached"]),
            "plateau.reached",
        ),
        (lambda d: d["series"][0]["points"][0].__setitem__("marks", []), "marks"),
        (lambda d: d["series"][0]["points"][1].__setitem__("copies", 1), "copies"),
        (lambda d: d["series"][0]["plateau"].__setitem__("maximum", {"bytes": 4096, "gbps": 1e6}), "plateau.maximum"),
        (lambda d: d["series"][0]["latency"].__setitem__("bytes", 1), "latency.bytes"),
        (lambda d: d["series"][0]["link"].__setitem__("kind", "nvlink"), "link.kind"),
        (lambda d: d["series"][0]["link"].__setitem__("rate_basis", "plateau?"), "link.rate_basis"),
    ],
)
def test_every_tampered_figure_is_caught(cpu_document, tamper, expected):
    document = json.loads(json.dumps(cpu_document))
    tamper(document)
    found = discrepancies(document)
    assert any(expected in line for line in found), found


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sizes", "4K", "0"], "a size must be positive"),
        (["--sizes", "4 parsecs"], "cannot read '4 parsecs' as a size"),
        (["--point-budget-s", "0"], "--point-budget-s 0: must be positive"),
        (["--device", "cpu", "--device-index", "1"], "--device-index: this run copies host memory on the CPU"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message):
    done = run_probe(*argv)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr


def test_default_sizes_shrink_to_fit_and_explicit_ones_are_refused():
    sizes, defaults = probe.parse_sizes(None, "cuda")
    assert sizes[-1] == 2**30 and defaults
    assert probe.fit_sizes(sizes, True, 2, 2**30, "half the free memory")[-1] == 2**29
    with pytest.raises(ProbeUsageError, match="--sizes 1 GiB: 2 buffers of it need 2048 MiB"):
        probe.fit_sizes(sizes, False, 2, 2**30, "half the free memory")


def measure_on_standin(count: int, peer_access: bool, *extra: str) -> dict:
    args = probe.build_parser().parse_args(["--sizes", "4K", "64K", "--point-budget-s", "0.001", *extra])
    sizes, defaults = probe.parse_sizes(args.sizes, "cuda")
    timing = {
        "method": "cuda_events",
        "statistic": "median of per-copy times",
        "warmup_copies": 2,
        "point_budget_s": 0.001,
        "min_copies": 5,
        "max_copies": 200,
    }
    with NvmlSession() as nvml:
        body = probe.measure_gpus(standin_torch(count, peer_access), args, nvml, sizes, defaults, timing)
    return {
        "probe": "transfer",
        "contract_version": 1,
        "started_at": "2026-12-01T00:00:00Z",
        "finished_at": "2026-12-01T00:00:01Z",
        "argv": [],
        **body,
    }


def test_the_gpu_code_path_builds_a_valid_document_with_every_part():
    document = measure_on_standin(2, True)
    assert violations("transfer", document) == [] and discrepancies(document) == []
    ids = {s["id"] for s in document["series"]}
    assert {
        "gpu0/h2d/pinned",
        "gpu1/d2h/pageable",
        "gpu0/bidirectional/h2d/pinned",
        "gpu1/local",
        "peer/write/0->1",
        "peer/write/1->0",
        "all-gpus/h2d/gpu1",
    } <= ids
    groups = {g["id"]: g for g in document["groups"]}
    assert groups["gpu0/bidirectional/pinned"]["same_clock"] and not groups["all-gpus/d2h"]["same_clock"]
    assert set(groups["gpu0/bidirectional/pinned"]["per_size"][0]["overlap"]) == set(
        groups["gpu0/bidirectional/pinned"]["members"]
    )
    assert document["peer"]["measured"] and document["all_gpus"]["measured"]


def test_refused_peer_access_measures_no_peer_copy_and_says_so():
    document = measure_on_standin(2, False, "--skip", "pageable", "bidirectional")
    assert violations("transfer", document) == []
    assert not any(s["direction"] == "device_to_device_peer" for s in document["series"])
    assert document["peer"]["measured"] is False
    assert "no peer access for 0->1, 1->0" in document["peer"]["why"]
    assert document["peer"]["access"] == {"0->1": False, "1->0": False}


def test_one_gpu_records_why_there_is_no_peer_matrix():
    document = measure_on_standin(1, True, "--skip", "pageable")
    assert violations("transfer", document) == []
    assert document["peer"] == {"measured": False, "why": "1 GPU measured: a peer matrix needs 2", "access": {}}
    assert any(item["what"] == "peer copies and all GPUs at once" for item in document["limitations"])


class RecordingDriver:
    def __init__(self):
        self.calls = []

    def call(self, name, *args):
        self.calls.append((name, args))
        if name == "cuDeviceGet":
            args[0]._obj.value = 3


def test_a_peer_read_is_issued_on_the_destination_stream_in_its_primary_context():
    driver = RecordingDriver()
    pull = driver_pull(driver, 1, dst_ptr=0x7000, src_ptr=0x9000, stream_handle=0x42)
    pull(4096)
    names = [name for name, _ in driver.calls]
    assert names == ["cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemcpyAsync"]
    assert driver.calls[0][1][1] == 1 and driver.calls[1][1][1].value == 3
    dst, src, size, stream = driver.calls[3][1]
    assert (dst.value, src.value, size.value, stream.value) == (0x7000, 0x9000, 4096, 0x42)
    assert isinstance(size, ctypes.c_size_t) and isinstance(dst, ctypes.c_uint64)


def test_a_cpu_run_copies_with_one_thread_so_64_kib_measures_memory_not_the_scheduler(cpu_document):
    """torch splits a copy of 64 KiB or more over its threads; waking them measured the scheduler (a dip
    to 0.004 GB/s at 64 KiB on the shared 2-core VM). The probe copies with one thread and says why."""
    host = cpu_document["host"]
    assert host["torch_threads"] == 1 and "waking them" in host["torch_threads_why"]
    assert "1 torch thread for the copies" in cpu_document["sizing"]


def test_the_copies_run_with_the_thread_count_the_document_states(monkeypatch):
    import torch

    from harness.probes import transfer

    seen = []
    monkeypatch.setattr(
        transfer,
        "sweep_alone",
        lambda *a: (
            seen.append(torch.get_num_threads())
            or [{"bytes": 4096, "copies": 5, "warmup_copies": 2, "copy_times_s": [1e-6] * 5}]
        ),
    )
    before = torch.get_num_threads()
    transfer.measure(transfer.build_parser().parse_args(["--device", "cpu", "--sizes", "4K"]))
    assert seen == [transfer.HOST_COPY_THREADS] and torch.get_num_threads() == before  # restored after
