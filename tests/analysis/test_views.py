"""The typed views of the documents the judges read most (issue 36): built once from the committed H200
bundle's documents, an unavailable field kept with its reason, a malformed document refused where the
view is built, naming the field."""

import copy
import dataclasses
from pathlib import Path

import pytest

from harness import registry
from harness.analysis.bandwidth import figures as bandwidth_figures
from harness.analysis.bandwidth.view import BandwidthFigures
from harness.analysis.health.view import HealthFigures
from harness.analysis.roofline.view import RooflineFigures
from harness.analysis.stress import figures as stress_figures
from harness.analysis.stress.device_record import DeviceRecord
from harness.analysis.stress.view import Check, DeviceFigures, StressFigures
from harness.analysis.transfer.view import LinkCheck, TransferFigures
from harness.analysis.views import DocumentError, Unavailable
from harness.bundle.read import read_all
from harness.bundle.view import BundleView

BUNDLE = Path(__file__).parents[1] / "fixtures" / "h200" / "campaign" / "c3-r1.tar.gz"


def view_of(view, step, document):
    """VIEW of DOCUMENT's headlines as a judge builds it (BundleFacts.viewed: the analysis recomputes them)."""
    heads = registry.analysis_module(step).headlines(document)
    return view.from_headlines(heads, document) if view is HealthFigures else view.from_headlines(heads)


@pytest.fixture(scope="module")
def documents():
    return BundleView.from_files(read_all(BUNDLE), registry.analysis_module).documents


def test_the_bandwidth_view_holds_the_recomputed_headlines(documents):
    view = view_of(BandwidthFigures, "bandwidth", documents["bandwidth"])
    heads = bandwidth_figures.headlines(documents["bandwidth"])
    assert view.device == "cuda" and not view.on_cpu and view.sku_id == "h200-sxm-141gb"
    assert view.plateau_gbps == heads["plateau_gbps"] and 4200 < view.plateau_gbps < 4300
    assert view.repeat_median_gbps == heads["repeat_median_gbps"]
    assert view.known_good_gbps == 4234 and view.known_good_ratio == pytest.approx(view.plateau_gbps / 4234)
    assert view.values == heads
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.plateau_gbps = 1.0  # type: ignore[misc]  # the assignment the test expects to be refused


def test_the_roofline_stress_transfer_and_health_views_of_the_h200_bundle(documents):
    roofline = view_of(RooflineFigures, "roofline", documents["roofline"])
    assert (roofline.dtype, roofline.bandwidth_gbps, roofline.peak_tflops) == ("bf16", 4273.6, 989.5)
    assert roofline.classified == 27 and roofline.all_explained is False
    stress = view_of(StressFigures, "stress", documents["stress"])
    assert (stress.dtype, stress.seconds, stress.device_count, stress.status) == ("bf16", 60.0, 1, "pass")
    assert dict(stress.shape) == {"m": 8192, "n": 8192, "k": 16384} and stress.failures == ()
    assert 600 < stress.min_steady_tflops < 700
    [device] = stress.devices
    assert device.index == 0 and device.steady_tflops == stress.min_steady_tflops
    assert {c.name: c.status for c in device.checks}["result_check"] == "pass"
    assert device.power_max_fraction is not None and device.power_why
    transfer = view_of(TransferFigures, "transfer", documents["transfer"])
    [link] = transfer.link_checks
    assert (link.name, link.status, transfer.p2p_checks) == ("GPU 0", "ok", ())
    assert not transfer.peer_measured and "needs 2" in transfer.peer_why
    health = view_of(HealthFigures, "health", documents["health"])
    assert (health.device_count, health.contracts_failed, dict(health.unread)) == (1, (), {})
    assert health.sku_ids == ("h200-sxm-141gb",)
    assert DeviceRecord.from_record(documents["stress"]["devices"][0]) == DeviceRecord(failure=None, unread={})


def test_a_software_fact_the_probe_could_not_read_stays_unavailable_with_its_reason(documents):
    health = copy.deepcopy(documents["health"])
    health["software"]["driver_version"] = {"unavailable": "NVML could not be loaded"}
    view = view_of(HealthFigures, "health", health)
    assert dict(view.unread) == {"driver_version": "NVML could not be loaded"}
    assert view.values["driver_version"] is None  # no value made up in its place


def test_a_stress_part_the_probe_could_not_read_keeps_its_reason_in_the_checks(documents):
    stress = copy.deepcopy(documents["stress"])
    record = stress["devices"][0]
    record["nvml_events"] = {"unavailable": "NVML event sets are not supported here"}
    view = DeviceRecord.from_record(record)
    assert view.unread == {"nvml_events": "NVML event sets are not supported here"}
    assert view.why("nvml_events", "no event set") == "NVML event sets are not supported here"
    assert view.why("memory_test", "not run") == "not run"
    [device] = stress_figures.headlines(stress)["devices"]
    [events] = [c for c in device["checks"] if c["name"] == "nvml_events"]
    assert events == {
        "name": "nvml_events",
        "status": "not-measured",
        "evidence": "NVML event sets are not supported here",
    }
    assert Unavailable.of({"unavailable": "why"}) == Unavailable("why") and Unavailable.of(3.5) is None


def test_a_worker_failure_is_its_message():
    record = {"failure": {"phase": "gemm", "message": "worker 0 killed by SIGKILL", "exit_code": None}}
    assert DeviceRecord.from_record(record).failure == "worker 0 killed by SIGKILL"


@pytest.mark.parametrize(
    "build, value, says",
    [
        (BandwidthFigures.from_headlines, [], "the bandwidth figures is not an object"),
        (RooflineFigures.from_headlines, "roofline", "the roofline figures is not an object"),
        (BandwidthFigures.from_headlines, {"repeat_spread": "3%"}, "repeat_spread is not a number"),
        (BandwidthFigures.from_headlines, {"plateau_gbps": True}, "plateau_gbps is not a number"),
        (RooflineFigures.from_headlines, {"all_explained": "yes"}, "all_explained is not true, false or null"),
        (RooflineFigures.from_headlines, {"classifications": [1, 2]}, "classifications is not an object"),
        (StressFigures.from_headlines, {"dtype": "bf16"}, "has no 'verdict'"),
        (TransferFigures.from_headlines, {"peer": {"measured": False}}, "has no 'per_gpu'"),
        (DeviceRecord.from_record, {"failure": {"phase": "gemm"}}, "failure names no message"),
        (lambda c: LinkCheck.from_check(c, "a check"), {"reasons": []}, "a check has no 'status'"),
        (lambda c: Check.from_check(c, "a check"), {"name": "x", "status": 1, "evidence": ""}, "are strings"),
        (lambda d: DeviceFigures.from_headlines(d, "a device"), {"checks": []}, "a device has no 'power'"),
    ],
)
def test_a_malformed_document_is_refused_where_the_view_is_built(build, value, says):
    with pytest.raises(DocumentError, match=says):
        build(value)


def test_a_malformed_health_software_block_is_refused(documents):
    health = copy.deepcopy(documents["health"])
    health["software"] = ["580.159.04"]
    with pytest.raises(DocumentError, match="health.json's software is not an object"):
        HealthFigures.from_headlines({"devices": []}, health)
