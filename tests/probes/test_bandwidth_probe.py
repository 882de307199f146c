"""The bandwidth probe end to end on the CPU, its sizing and its usage errors, through the CLI."""

import json

import pytest

from harness.analysis.bandwidth import discrepancies, headlines
from harness.cli import main
from harness.present.plots.bandwidth import render
from harness.probes import bandwidth as probe
from harness.probes.contract import ProbeUsageError
from harness.schemas import violations
from tests.bandwidth_fixtures import cpu_sweep

FAST = ["--device", "cpu", "--size-mib", "1", "2", "--point-budget-s", "0.01", "--repeat-budget-s", "0.01"]


def test_default_gpu_sweep_goes_up_in_powers_of_two_to_the_largest_safe_size():
    free = 142274 * 2**20  # nvidia-smi -q on the lent H200: FB memory free
    safe = probe.largest_safe_mib(free)
    assert safe == pytest.approx(142274 * 0.5 / 3)
    assert probe.default_sizes("cuda", safe) == [4, 64, 256, 1024, 2048, 4096, 8192, 16384]
    assert probe.default_sizes("cpu", 10**6) == [1, 4, 16, 64, 128]


@pytest.mark.parametrize(
    "size, message",
    [(0, "must be positive"), (-5, "must be positive"), (10**9, "in all"), (40000, "above the largest safe size")],
)
def test_sizes_the_device_cannot_hold_are_refused(size, message):
    with pytest.raises(ProbeUsageError, match=message):
        probe.check_sizes([size], total_bytes=143771 * 2**20, free_bytes=142274 * 2**20, where="cuda:0")


def test_cli_runs_the_probe_on_cpu_and_writes_a_valid_document(tmp_path, capsys):
    output = tmp_path / "bandwidth.json"
    code = main(["bandwidth", *FAST, "--kernel", "triad", "-o", str(output), "--plot", str(tmp_path / "bw")])
    document = json.loads(output.read_text())
    assert code == (0 if document["repeats"]["verdict"] == "pass" else 1)
    assert violations("bandwidth", document) == []
    assert discrepancies(document) == []
    assert document["device"] == "cpu" and document["kernel"] == "triad"
    assert document["byte_counting"]["reads"] == 2 and document["byte_counting"]["writes"] == 1
    assert [p["size_mib"] for p in document["sweep"]] == [1, 2]
    assert document["repeats"]["size_mib"] == 2 and len(document["repeats"]["medians_gbps"]) == 3
    assert "2-core CI" in document["sizing"]
    assert "no reference for host memory" in document["reference"]["why"]
    assert document["repeats"]["telemetry"]["samples"] == {"unavailable": "device=cpu: no GPU to sample"}
    assert (tmp_path / "bw.png").stat().st_size > 0 and (tmp_path / "bw.svg").stat().st_size > 0
    assert "triad on cpu" in capsys.readouterr().err
    # the empty-launch times are kept, so the median that marks launch-bound points is recomputed
    launch = document["launch"]
    assert len(launch["empty_launch_times_s"]) == 200 and document["contract_version"] >= 2
    launch["empty_launch_s"] *= 10
    assert any(line.startswith("launch.empty_launch_s") for line in discrepancies(document))


def test_cli_rejects_a_non_positive_size(tmp_path, capsys):
    assert main(["bandwidth", "--size-mib", "4", "0", "-o", str(tmp_path / "b.json")]) == 2
    assert "--size-mib 0: sizes must be positive" in capsys.readouterr().err


def test_cli_rejects_a_size_larger_than_memory_with_the_probes_reason(tmp_path, capsys):
    code = main(["bandwidth", "--device", "cpu", "--size-mib", "100000000", "-o", str(tmp_path / "b.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "3 buffers need 300000000 MiB but host memory has" in err
    assert not (tmp_path / "b.json").exists()


def test_cli_rejects_an_unknown_kernel(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["bandwidth", "--kernel", "stream"])
    assert exited.value.code == 2
    assert "invalid choice: 'stream'" in capsys.readouterr().err


def test_cli_rejects_an_unknown_compare_sku(capsys):
    assert main(["bandwidth", "--device", "cpu", "--compare-sku", "h300-sxm"]) == 2
    assert "h200-sxm-141gb" in capsys.readouterr().err


def test_plot_is_deterministic(tmp_path):
    document = cpu_sweep()
    first = [p.read_bytes() for p in render(document, tmp_path / "a")]
    second = [p.read_bytes() for p in render(document, tmp_path / "b")]
    assert first == second


def test_headlines_keys_match_the_brief():
    assert {
        "device",
        "kernel",
        "plateau_gbps",
        "plateau_sizes_mib",
        "plateau_tolerance",
        "repeat_size_mib",
        "repeat_medians_gbps",
        "repeat_spread",
        "repeat_verdict",
        "sku_id",
        "spec_gbps",
        "known_good_gbps",
        "known_good_ratio",
    } <= set(headlines(cpu_sweep()))


def test_a_torch_device_nvml_cannot_match_by_uuid_is_never_guessed_by_position():
    """CUDA_VISIBLE_DEVICES=1 makes torch's cuda:0 NVML's device 1: a position is no identity."""
    from types import SimpleNamespace

    from harness.probes import bandwidth as probe
    from harness.probes.nvml import NvmlSession

    class Nvml:  # the two NVML calls UUID matching makes; one device, another card's UUID
        def nvmlDeviceGetCount(self):
            return 1

        def nvmlDeviceGetHandleByIndex(self, index):
            return f"handle{index}"

        def nvmlDeviceGetUUID(self, handle):
            return "GPU-11111111-2222-3333-4444-555555555555"

    def fake_torch(uuid):
        props = SimpleNamespace(uuid=uuid)
        return SimpleNamespace(cuda=SimpleNamespace(get_device_properties=lambda index: props))

    session = NvmlSession()
    session.pynvml = Nvml()
    handle, how = probe.nvml_handle(session, fake_torch("GPU-99999999-2222-3333-4444-555555555555"), 0)
    assert isinstance(handle, dict) and "no NVML device has torch's UUID" in handle["unavailable"]
    handle, how = probe.nvml_handle(session, fake_torch(None), 0)
    assert "torch gave no UUID" in handle["unavailable"]
    handle, how = probe.nvml_handle(session, fake_torch("GPU-11111111-2222-3333-4444-555555555555"), 0)
    assert handle == "handle0" and how.startswith("by UUID")
