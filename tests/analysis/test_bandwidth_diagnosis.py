"""The variance-failure path: a diagnosis drawn from real H200 telemetry (tests/fixtures/h200)."""

import argparse

from harness.analysis.bandwidth import figures as bw
from harness.probes import bandwidth as probe
from harness.probes.bandwidth import repeats
from tests.bandwidth_fixtures import sample_from_nvml_fields, sample_from_smi_q

OURS = 463  # the copy loop's pid in nvml-fields.copy-load.json


def steady():
    return [sample_from_nvml_fields("nvml-fields.copy-load.json") for _ in range(10)]


def capped():
    # the same card 6 s into a bf16 GEMM loop run by another process (pid 417): SW Power Cap
    return steady()[:5] + [sample_from_smi_q("nvidia-smi-q.load.txt") for _ in range(5)]


def test_steady_copy_load_shows_no_cause():
    found = bw.diagnose(steady(), [OURS], 700.0)
    assert found["causes"] == []
    assert "no cause visible in 10 NVML samples" in found["summary"]


def test_power_capped_samples_name_clock_drop_power_cap_and_the_other_process():
    found = bw.diagnose(capped(), [OURS], 700.0)
    kinds = {c["kind"]: c["evidence"] for c in found["causes"]}
    assert set(kinds) == {"clock_drop", "power_cap", "other_process"}
    assert "1980 to 1305 MHz" in kinds["clock_drop"]
    assert "sw_power_cap" in kinds["power_cap"] and "608.61 W" in kinds["power_cap"]
    assert "pid 417 (python3, 874 MiB)" in kinds["other_process"]
    assert "pid 463" not in kinds["other_process"]


def test_power_near_the_limit_without_a_reason_bit_is_still_a_cap():
    samples = steady()
    samples[3]["power_w"] = 690.0
    assert [c["kind"] for c in bw.diagnose(samples, [OURS], 700.0)["causes"]] == ["power_cap"]


class FakeSampler:
    """Stands in for harness.probes.nvml.Sampler, replaying recorded samples."""

    def __init__(self, pynvml, handle, interval_s):
        self.samples = capped()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None


class FakeNvml:
    ok = True

    class pynvml:  # mimics the module
        @staticmethod
        def nvmlDeviceGetEnforcedPowerLimit(handle):
            return 700000


def test_repeats_that_vary_by_more_than_5_percent_are_diagnosed_and_not_trusted(monkeypatch):
    import torch

    monkeypatch.setattr(repeats, "Sampler", FakeSampler)
    monkeypatch.setattr(repeats, "sample", lambda pynvml, handle: sample_from_nvml_fields("nvml-fields.copy-load.json"))
    per_call = iter([1e-3, 1e-3, 1.3e-3, 1.3e-3, 1e-3, 1e-3])  # warm-up then timed, per repeat

    def timer(fn, n):
        t = next(per_call)
        return [t] * n

    args = argparse.Namespace(repeats=3, kernel="copy", device_index=0)
    measurement = probe.Measurement(torch, "cuda", args, FakeNvml())
    measurement.handle = "handle"
    result = repeats.Repeats(measurement, lambda: None, 4096.0, 4096 * 2**18, timer).round(0.01, None, 1e-6, 0, 3, None)
    assert result["verdict"] == "fail" and result["trusted"] is False
    assert result["spread"] > 0.05
    assert len(result["telemetry"]["samples"]) >= repeats.MIN_SAMPLES
    assert result["telemetry"]["own_pids"] == [OURS]  # our pid is not NVML's: matched by allocation
    kinds = {c["kind"] for c in result["diagnosis"]["causes"]}
    assert kinds == {"clock_drop", "power_cap", "other_process"}


def test_repeats_within_5_percent_pass_without_diagnosis(monkeypatch):
    import torch

    monkeypatch.setattr(repeats, "Sampler", FakeSampler)
    monkeypatch.setattr(repeats, "sample", lambda pynvml, handle: sample_from_nvml_fields("nvml-fields.copy-load.json"))
    args = argparse.Namespace(repeats=3, kernel="copy", device_index=0)
    measurement = probe.Measurement(torch, "cuda", args, FakeNvml())
    measurement.handle = "handle"
    timed = repeats.Repeats(measurement, lambda: None, 64.0, 64 * 2**18, lambda fn, n: [1e-3] * n)
    result = timed.measure(0.01, None, 1e-6, 0, 3, None)
    assert result["verdict"] == "pass" and result["diagnosis"] is None
    assert "first_round" not in result and "again" not in result  # agreeing repeats: nothing measured again
    assert result["repeat_budget_s"] == 0.01


def _measured(monkeypatch, per_repeat, budget=0.01):
    """Repeats.measure on the CPU with a timer giving each repeat's per-iteration time from PER_REPEAT in
    turn (a repeat is two timed calls: its warm-up, then its iterations; harness.probes.bandwidth.points)."""
    import torch

    calls = []

    def timer(fn, n):
        calls.append(n)
        return [per_repeat[(len(calls) - 1) // 2]] * n

    args = argparse.Namespace(repeats=3, kernel="copy", device_index=0)
    measurement = probe.Measurement(torch, "cpu", args, FakeNvml())
    return repeats.Repeats(measurement, lambda: None, 64.0, 64 * 2**18, timer).measure(budget, None, 1e-6, 0, 3, None)


def test_repeats_that_disagree_are_measured_again_longer_and_that_round_is_judged(monkeypatch):
    result = _measured(monkeypatch, [1e-3, 1.3e-3, 1e-3, 1e-3, 1.01e-3, 1e-3])  # then the longer round agrees
    assert result["verdict"] == "pass" and result["spread"] < 0.05
    assert result["repeat_budget_s"] == 0.04  # AGAIN_FACTOR x the first round's 0.01 s
    first = result["first_round"]
    assert first["verdict"] == "fail" and first["spread"] > 0.05 and first["repeat_budget_s"] == 0.01
    assert len(first["runs"]) == len(result["runs"]) == 3
    assert "varied by 23.1%, not under 5%" in result["again"]["why"]
    assert result["again"]["rule"] == bw.AGAIN_RULE and result["again"]["factor"] == bw.AGAIN_FACTOR


def test_repeats_that_still_disagree_keep_failing_and_say_both_rounds(monkeypatch):
    result = _measured(monkeypatch, [1e-3, 1.3e-3, 1e-3, 1e-3, 1.2e-3, 1e-3])
    assert result["verdict"] == "fail" and result["first_round"]["verdict"] == "fail"


def test_no_budget_for_longer_repeats_is_said_not_hidden(monkeypatch):
    monkeypatch.setitem(repeats.AGAIN_BUDGET_S, "cpu", 0.03)  # 0.01 s a repeat: less than twice the first's 0.01 s
    result = _measured(monkeypatch, [1e-3, 1.3e-3, 1e-3])
    assert result["verdict"] == "fail" and "first_round" not in result
    assert result["again"]["why"].endswith("no budget left")
