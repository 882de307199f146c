"""Stress analysis: headlines recomputed from raw data, a tampered figure caught, the power, cap,
slowdown, event and counter rules on both sides of their thresholds, NVML reading on real H200
answers, and the plot.

The CPU document is a real probe run (tests/fixtures/stress/stress-cpu.json, see the fixtures
README). A CPU has no NVML, so the GPU rules run on `gpu_shaped`: that same run with NVML samples,
a power limit, events and counters written in by the test, each stated where it is made, to move
one rule across its threshold at a time. Real H200 answers come through tests/h200_capture.py.
"""

import copy
import json
from pathlib import Path

import pytest

from harness.analysis import stress as stress_analysis  # discrepancies: the figures' and the records' checks
from harness.analysis.stress import figures as analysis
from harness.analysis.stress import telemetry as tel
from harness.present.plots import stress as plot
from harness.probes.stress import nvml as nv
from harness.schemas import violations
from tests.h200_capture import nvidia_smi_xml

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stress" / "stress-cpu.json"
LIMIT_W = 700.0
SW_POWER_CAP, HW_THERMAL = 0x4, 0x40


@pytest.fixture
def cpu():
    return json.loads(FIXTURE.read_text())


def ecc(uncorrected=0, corrected=0, pending=False, remapped=0):
    return {
        "mode_current": "enabled",
        "mode_pending": "enabled",
        "volatile_corrected_errors": corrected,
        "volatile_uncorrected_errors": uncorrected,
        "aggregate_corrected_errors": corrected,
        "aggregate_uncorrected_errors": uncorrected,
        "remapped_rows_corrected": remapped,
        "remapped_rows_uncorrected": 0,
        "remapped_rows_pending": pending,
        "remapped_rows_failure": False,
    }


def samples(record, cap_at_s=None, power_w=690.0, extra_mask=0, extra_from_s=None):
    """One sample every 0.1 s over the record's run: 1980 MHz until the cap, then 1500 MHz at `power_w`."""
    end = record["memory_test"]["end_s"]
    found, t = [], 0.0
    while t <= end:
        capped = cap_at_s is not None and t >= cap_at_s
        mask = (SW_POWER_CAP if capped else 0) | (extra_mask if extra_from_s is not None and t >= extra_from_s else 0)
        found.append(
            {
                "t_s": round(t, 4),
                "sm_clock_mhz": 1500 if capped else 1980,
                "memory_clock_mhz": 3201,
                "power_w": power_w if capped else power_w * 0.8,
                "power_average_w": {"unavailable": "NVMLError_NotSupported: Not Supported"},
                "gpu_temperature_c": 50 + t,
                "memory_temperature_c": {"unavailable": "NVMLError_NotSupported: Not Supported"},
                "clock_event_reasons_mask": mask,
            }
        )
        t += 0.1
    return found


def gpu_shaped(document, events=(), before=None, after=None, **sample_args):
    """The real CPU run with GPU-side NVML data written in by the test (see the module docstring)."""
    doc = copy.deepcopy(document)
    doc["device"] = doc["settings"]["device"] = "cuda"
    doc["settings"]["memory_test"]["share_of_free"] = 0.8
    record = doc["devices"][0]
    record["facts"]["name"] = "test GPU"
    # the CPU run's 48 MiB region, as a GPU's: 0.8 of 80 MiB free, less the 8 MiB scratch chunk and its mask
    record["memory_test"].update(
        where="device memory", free_bytes=80 * 2**20, host_budget_bytes=None, share_of_free=0.8
    )
    record.update(
        name="test GPU",
        power_limit_w=LIMIT_W,
        nvml={"matched": "test"},
        telemetry={"interval_s": 0.1, "samples": samples(record, **sample_args)},
        nvml_events={
            "registered_event_types": ["xid_critical_error"],
            "not_supported_event_types": [],
            "events": list(events),
            "wait_error": None,
        },
        counters_before=before or ecc(),
        counters_after=after or ecc(),
    )
    return doc


def restate(doc):
    """What the probe does after measuring: state each bucket's figures and the summary."""
    flop = doc["settings"]["flop_per_gemm"]
    for record in doc["devices"]:
        for bucket in analysis.buckets_of(record):
            bucket["figures"] = analysis.bucket_figures(bucket, analysis.samples_of(record), flop)
    doc["summary"] = analysis.headlines(doc)
    return doc


def checks(doc):
    return {c["name"]: c for c in analysis.headlines(doc)["devices"][0]["checks"]}


def test_the_real_cpu_run_recomputes_to_its_own_summary(cpu):
    assert violations("stress", cpu) == []
    assert analysis.headlines(cpu) == cpu["summary"]
    assert stress_analysis.discrepancies(cpu) == []
    head = cpu["summary"]["devices"][0]
    buckets = cpu["devices"][0]["gemm"]["buckets"]
    flop = cpu["settings"]["flop_per_gemm"]
    assert head["burst_tflops"] == pytest.approx(
        buckets[0]["iterations"] * flop / (sum(buckets[0]["gemm_ms"]) / 1e3) / 1e12
    )
    assert head["burst_over_steady"] == pytest.approx(head["burst_tflops"] / head["steady_tflops"])


def test_a_tampered_gemm_time_shows_in_its_bucket_and_the_steady_rate(cpu):
    cpu["devices"][0]["gemm"]["buckets"][-1]["gemm_ms"][0] *= 2
    found = stress_analysis.discrepancies(cpu)
    assert any(f".bucket[{len(cpu['devices'][0]['gemm']['buckets']) - 1}].figures.tflops" in f for f in found)
    assert any("summary.devices[0].steady_tflops" in f for f in found)


def test_a_tampered_stated_figure_is_named(cpu):
    cpu["summary"]["devices"][0]["steady_tflops"] *= 1.01
    assert [f.split(":")[0] for f in stress_analysis.discrepancies(cpu)] == ["summary.devices[0].steady_tflops"]


def test_a_hidden_mismatch_turns_the_recomputed_verdict(cpu):
    cpu["devices"][0]["gemm"]["buckets"][0]["mismatched_elements"][1] = 3
    found = stress_analysis.discrepancies(cpu)
    assert any(f.startswith("summary.verdict.status: states 'pass', recomputed 'fail'") for f in found)
    assert any("bucket[0].figures.mismatched_elements" in f for f in found)
    assert "iteration 1: 3 element(s)" in analysis.headlines(cpu)["verdict"]["failures"][0]


def test_a_hidden_memory_error_turns_the_recomputed_verdict(cpu):
    cpu["devices"][0]["memory_test"]["patterns"][2]["mismatched_words_per_chunk"][0] = 1
    found = stress_analysis.discrepancies(cpu)
    assert any(f.startswith("summary.devices[0].memory_test.mismatched_words") for f in found)
    assert any(f.startswith("summary.verdict.status") for f in found)


def test_power_cap_moment_and_target_reached(cpu):
    doc = restate(gpu_shaped(cpu, cap_at_s=1.0))
    assert violations("stress", doc) == [] and stress_analysis.discrepancies(doc) == []
    head = doc["summary"]["devices"][0]
    start = doc["devices"][0]["gemm"]["started_s"]
    first = min(
        s["t_s"]
        for s in doc["devices"][0]["telemetry"]["samples"]
        if s["clock_event_reasons_mask"] & SW_POWER_CAP and s["t_s"] >= start
    )
    assert head["power_cap"] == {"engaged_after_s": round(first - start, 4), "why_never": None}
    assert head["power"]["target_reached"] is True and head["power"]["max_fraction"] == pytest.approx(690 / 700)
    assert head["clock_event_reasons"]["sw_power_cap"] > 0 and head["flagged_reasons"] == []
    named = checks(doc)
    assert (
        named["clock_event_reasons"]["status"] == "pass"
        and "sw_power_cap (expected)" in named["clock_event_reasons"]["evidence"]
    )
    assert named["power_target"]["status"] == "pass"
    assert head["max_memory_temperature_c"] is None  # unavailable samples are left out, never zero
    assert doc["summary"]["verdict"]["status"] == "pass"


def test_power_below_the_target_fails_and_says_why(cpu):
    capped_low = checks(gpu_shaped(cpu, cap_at_s=1.0, power_w=620.0))["power_target"]
    assert capped_low["status"] == "fail" and "sw_power_cap engaged below the target" in capped_low["evidence"]
    uncapped = checks(gpu_shaped(cpu, power_w=500.0))["power_target"]
    assert (
        uncapped["status"] == "fail" and "no power cap" in uncapped["evidence"] and "1980 MHz" in uncapped["evidence"]
    )
    at_target = checks(gpu_shaped(cpu, cap_at_s=1.0, power_w=tel.POWER_TARGET_RATIO * LIMIT_W))["power_target"]
    assert at_target["status"] == "pass"
    head = analysis.headlines(gpu_shaped(cpu, power_w=500.0))["devices"][0]
    assert head["power_cap"]["engaged_after_s"] is None and "sw_power_cap in none of" in head["power_cap"]["why_never"]
    assert head["power"]["dcgm_floor_met"] is False  # 500 W is under 0.75 x 700 W as well


def test_a_thermal_slowdown_fails_the_run(cpu):
    doc = gpu_shaped(cpu, cap_at_s=1.0, extra_mask=HW_THERMAL, extra_from_s=1.5)
    check = checks(doc)["clock_event_reasons"]
    count = analysis.headlines(doc)["devices"][0]["clock_event_reasons"]["hw_thermal_slowdown"]
    assert check["status"] == "fail" and check["evidence"] == f"hw_thermal_slowdown in {count} sample(s)"
    assert checks(doc)["power_target"]["status"] == "pass"


def test_an_xid_fails_and_is_named(cpu):
    xid = {"t_s": 1.2, "event_type": "xid_critical_error", "event_type_mask": 8, "event_data": 79, "xid": 79}
    check = checks(gpu_shaped(cpu, cap_at_s=1.0, events=[xid]))["nvml_events"]
    assert check["status"] == "fail" and "XID [79]" in check["evidence"]
    refused = gpu_shaped(cpu, cap_at_s=1.0)
    refused["devices"][0]["nvml_events"] = {"unavailable": "NVMLError_NotSupported: Not Supported"}
    assert checks(refused)["nvml_events"] == {
        "name": "nvml_events",
        "status": "not-measured",
        "evidence": "NVMLError_NotSupported: Not Supported",
    }


@pytest.mark.parametrize(
    "after, status, words",
    [
        (ecc(uncorrected=1), "fail", "volatile_uncorrected_errors +1"),
        (ecc(pending=True), "fail", "remapped_rows_pending_raised"),
        (ecc(remapped=2), "fail", "remapped_rows_corrected +2"),
        (ecc(corrected=2), "pass", "2 new corrected ECC error(s)"),
    ],
)
def test_counters_gained_during_the_run(cpu, after, status, words):
    check = checks(gpu_shaped(cpu, cap_at_s=1.0, after=after))["ecc_and_row_remap"]
    assert check["status"] == status and words in check["evidence"]


def test_real_h200_answers_read_as_a_capped_sample_below_the_target():
    """nvidia-smi -q -x 6 s into a bf16 GEMM loop on the lent H200: instant power 573.16 W, SW Power Cap
    active (its 688.96 W one-second average was not captured as an NVML field, so it stays unavailable)."""
    nvml = nvidia_smi_xml("nvidia-smi-q.load.xml")
    sample = nv.read_sample(nvml, object(), 6.0)
    assert sample["power_w"] == 573.16 and sample["clock_event_reasons_mask"] & SW_POWER_CAP
    assert sample["memory_temperature_c"]["unavailable"].startswith("NotCaptured")
    assert sample["power_average_w"]["unavailable"].startswith("NotCaptured")
    assert nv.power_limit_w(nvml, object()) == LIMIT_W
    assert nv.error_counters(nvml, object())["volatile_uncorrected_errors"] == 0
    cap = tel.power_cap([sample], 0.0, 10.0, LIMIT_W)
    power = tel.power_figures([sample], LIMIT_W, cap, [])
    assert cap["engaged_after_s"] == 6.0
    assert power["target_reached"] is False and power["dcgm_floor_met"] is True
    assert power["source"].startswith("nvmlDeviceGetPowerUsage")
    assert "sw_power_cap engaged below the target" in power["why"]


def test_the_one_second_average_is_preferred_where_nvml_gives_it(cpu):
    doc = gpu_shaped(cpu, cap_at_s=1.0, power_w=560.0)
    for sample in doc["devices"][0]["telemetry"]["samples"]:
        sample["power_average_w"] = 689.0
    power = analysis.headlines(doc)["devices"][0]["power"]
    assert power["source"].startswith("NVML_FI_DEV_POWER_AVERAGE") and power["max_w"] == 689.0
    assert power["target_reached"] is True


class EventNvml:
    """Stands in for pynvml's event-set calls (no NVML here): supports XID and ECC events, delivers one
    XID 79, then times out until stopped."""

    NVML_ERROR_TIMEOUT = 10

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(f"error {value}")
            self.value = value

    def __init__(self, supported=0xB):
        self.supported, self.delivered, self.registered = supported, False, None

    def nvmlDeviceGetSupportedEventTypes(self, handle):
        return self.supported

    def nvmlEventSetCreate(self):
        return "set"

    def nvmlDeviceRegisterEvents(self, handle, types, event_set):
        self.registered = types

    def nvmlEventSetWait_v2(self, event_set, timeout_ms):
        if self.delivered:
            raise self.NVMLError(self.NVML_ERROR_TIMEOUT)
        self.delivered = True
        return type("Data", (), {"eventType": 0x8, "eventData": 79})()

    def nvmlEventSetFree(self, event_set):
        pass


def test_event_watcher_registers_and_records_an_xid():
    import threading

    got, arrived = [], threading.Event()
    nvml = EventNvml()
    watcher = nv.EventWatcher(nvml, "handle", 0.0, lambda e: (got.append(e), arrived.set()))
    status = watcher.start()
    assert status == {
        "registered_event_types": ["double_bit_ecc_error", "single_bit_ecc_error", "xid_critical_error"],
        "not_supported_event_types": [],
    }
    assert nvml.registered == 0xB and arrived.wait(5)
    assert watcher.stop() is None
    assert got[0]["xid"] == 79 and got[0]["event_type"] == "xid_critical_error"


def test_event_watcher_says_why_when_nothing_can_be_registered():
    status = nv.EventWatcher(EventNvml(supported=0x4), "handle", 0.0, lambda e: None).start()
    assert status["unavailable"].startswith("NVML supports none of xid_critical_error")


def test_plot_renders_the_same_bytes_twice(cpu, tmp_path):
    for name, doc in (("cpu", cpu), ("gpu", gpu_shaped(cpu, cap_at_s=1.0))):
        first = plot.render(doc, tmp_path / "a" / name)
        second = plot.render(doc, tmp_path / "b" / name)
        assert [p.suffix for p in first] == [".png", ".svg"]
        assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_the_schema_refuses_a_bucket_without_its_raw_times(cpu):
    del cpu["devices"][0]["gemm"]["buckets"][0]["gemm_ms"]
    assert [v.path for v in violations("stress", cpu)] == ["/devices/0/gemm"]


def test_a_cpu_plot_draws_no_empty_panel_and_says_why(cpu, tmp_path, monkeypatch):
    """A CPU run has no NVML: its plot is the GEMM panel alone, with a line saying why the SM clock and
    power panels are not there; a GPU run with readings draws all three."""
    import matplotlib.pyplot as plt

    assert plot.panels(plot.series(cpu)) == ["tflops"]
    figures = []
    monkeypatch.setattr(plot, "save_figure", lambda fig, stem: figures.append(fig) or [])
    plot.render(cpu, tmp_path / "cpu")
    [fig] = figures
    assert len(fig.axes) == 1
    assert [t.get_text() for t in fig.texts] == ["No SM clock or power panel: a CPU run has no NVML to read them."]
    plt.close(fig)
    gpu = gpu_shaped(cpu, cap_at_s=1.0)
    assert plot.panels(plot.series(gpu)) == ["tflops", "sm_clock_mhz", "power_w"]
    assert plot.missing(gpu, plot.panels(plot.series(gpu))) is None
