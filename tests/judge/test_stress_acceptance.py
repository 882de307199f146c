"""The stress probe's acceptance criteria on the real H200 runs (tests/fixtures/h200/stress-*.json):
each criterion's pass path on the document as recorded, and its fail path on a copy with one
recorded fact changed (named in each test as EDITED); plus the registry entry's step, options,
fleet metrics and report section."""

import copy
import json
from pathlib import Path

import pytest

from harness import registry
from harness.analysis import stress as stress_analysis  # discrepancies: the figures' and the records' checks
from harness.analysis.stress import figures as analysis
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import evaluate
from harness.judge.acceptance.stress import SUSTAINED_GEMM
from harness.judge.facts import BundleFacts
from harness.present.tables import stress as table
from harness.probes import stress as probe
from harness.registry import stress as entry
from harness.registry.steps import RunState
from harness.schemas import violations
from tests.accept_support import apply_file, h200_raw, resolve, view_of

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h200"
SXM = "h200-sxm-141gb"
STRESS = (
    "stress_sustained_bf16",
    "stress_duration",
    "stress_result_mismatches_zero",
    "stress_memory_errors_zero",
    "stress_no_new_errors",
    "stress_no_slowdown_events",
    "stress_power_target_reached",
)
HW_SLOWDOWN = 0x8  # NVML clocks-event reason bit (nvmlClocksEventReasonHwSlowdown)


@pytest.fixture(scope="module")
def bf16():
    return json.loads((FIXTURES / "stress-bf16.json").read_text())


@pytest.fixture(scope="module")
def tf32():
    return json.loads((FIXTURES / "stress-tf32.json").read_text())


def judged(stress, profile=None):
    results = evaluate(BundleFacts(view_of({"stress": stress})), profile or resolve(SXM), CRITERIA)
    return {r.name: r for r in results if r.name.startswith("stress_")}


def edited(document, change):
    """A copy of the real document with one recorded fact changed (EDITED), restated as the probe would."""
    doc = copy.deepcopy(document)
    change(doc["devices"][0])
    flop = doc["settings"]["flop_per_gemm"]
    for record in doc["devices"]:
        for bucket in analysis.buckets_of(record):
            bucket["figures"] = analysis.bucket_figures(bucket, analysis.samples_of(record), flop)
    doc["summary"] = analysis.headlines(doc)
    assert violations("stress", doc) == []
    return doc


def test_the_h200_runs_are_schema_valid_and_recompute_to_their_summaries(bf16, tf32):
    for doc in (bf16, tf32):
        assert violations("stress", doc) == []
        assert stress_analysis.discrepancies(doc) == []


def test_the_recorded_h200_run_passes_every_stress_criterion(bf16):
    """It ran 45 s: it passes everything under a profile that takes 45 s (the catalogue asks 60)."""
    results = judged(
        bf16, apply_file(resolve(SXM), {"sku_id": SXM, "thresholds": {"stress_min_seconds": 45}}, "test profile")
    )
    digests = {"stress_digests_agree", "stress_digest_expected"}  # recorded before digests were: skipped
    assert set(results) == set(STRESS) | digests
    assert {n: r.status for n, r in results.items()} == {
        **dict.fromkeys(STRESS, Verdict.PASS),
        **dict.fromkeys(digests, Verdict.SKIP),
    }
    sustained = results["stress_sustained_bf16"]
    assert sustained.measured.value == pytest.approx(676.906, abs=1e-3)
    assert sustained.threshold.value == pytest.approx(0.9 * 676.9)
    assert "devices[].gemm.buckets" in sustained.evidence
    assert results["stress_duration"].measured.value == 45
    assert results["stress_power_target_reached"].measured.value == pytest.approx(696.796 / 700)


def test_our_tf32_sustained_rate_passes_against_gpu_burns(tf32):
    """The tf32 known-good is the established tool's (gpu-burn -tc, 353.3 TFLOPS): ours, 356.0, passes."""
    result = judged(tf32)["stress_sustained_tf32"]
    assert result.status == Verdict.PASS
    assert "gpu-burn" in resolve(SXM).known(SUSTAINED_GEMM)["tf32"].source
    assert result.threshold.value == pytest.approx(0.9 * 353.3)


def test_a_slower_steady_state_fails_the_sustained_criterion(bf16):
    def slower(record):  # EDITED: every GEMM of the second half took 20% longer
        buckets = record["gemm"]["buckets"]
        for bucket in buckets[len(buckets) // 2 :]:
            bucket["gemm_ms"] = [t * 1.2 for t in bucket["gemm_ms"]]

    result = judged(edited(bf16, slower))["stress_sustained_bf16"]
    assert result.status == Verdict.FAIL
    assert result.measured.value == pytest.approx(676.906 / 1.2, rel=1e-3)
    assert "below 609.2 TFLOPS" in result.why


def test_a_shorter_run_than_the_profile_asks_fails_naming_the_option(bf16):
    result = judged(bf16)["stress_duration"]  # the catalogue asks for the probe's 60 s default
    assert result.status == Verdict.FAIL
    assert result.why == "45 s is shorter than 60 s: run `dossier run --stress-seconds 60`"
    profile = apply_file(resolve(SXM), {"sku_id": SXM, "thresholds": {"stress_min_seconds": 600}}, "test profile")
    assert judged(bf16, profile)["stress_duration"].why.endswith("run `dossier run --stress-seconds 600`")


def test_a_mismatched_result_fails_naming_the_iteration(bf16):
    def flipped(record):  # EDITED: iteration 881 (bucket 3, its third) had 1 mismatched element
        record["gemm"]["buckets"][3]["mismatched_elements"][2] = 1

    result = judged(edited(bf16, flipped))["stress_result_mismatches_zero"]
    assert result.status == Verdict.FAIL and result.measured.value == 1
    assert "GPU0: result_check: 1 of 13337 iterations mismatched" in result.why and "iteration 881" in result.why


def test_a_memory_error_fails_naming_the_address(bf16):
    def bad_word(record):  # EDITED: one word of the first pattern's chunk 5 read back wrong
        pattern = record["memory_test"]["patterns"][0]
        pattern["mismatched_words_per_chunk"][5] = 1
        pattern["first_failure"] = {
            "chunk": 5,
            "byte_offset": 5 * 2**30 + 64,
            "chunk_byte_offset": 64,
            "expected_hex": "0x0000000000000001",
            "found_hex": "0x0000000000000000",
        }

    doc = edited(bf16, bad_word)
    result = judged(doc)["stress_memory_errors_zero"]
    assert result.status == Verdict.FAIL and result.measured.value == 1
    assert "GPU0: memory_test" in result.why and str(5 * 2**30 + 64) in result.why


def test_an_xid_or_a_new_row_remap_fails(bf16):
    def xid(record):  # EDITED: NVML delivered XID 79 mid-run
        record["nvml_events"]["events"] = [
            {"t_s": 20.0, "event_type": "xid_critical_error", "event_type_mask": 8, "event_data": 79, "xid": 79}
        ]

    result = judged(edited(bf16, xid))["stress_no_new_errors"]
    assert result.status == Verdict.FAIL and "XID [79]" in result.why and result.measured.value == 1

    def remap(record):  # EDITED: the row-remap counter after the run is 1 higher
        record["counters_after"]["remapped_rows_uncorrected"] = 1

    result = judged(edited(bf16, remap))["stress_no_new_errors"]
    assert result.status == Verdict.FAIL and "remapped_rows_uncorrected +1" in result.why


def test_a_hw_slowdown_sample_fails(bf16):
    def slowdown(record):  # EDITED: one sample in the GEMM phase also shows hw_slowdown
        sample = next(s for s in record["telemetry"]["samples"] if s["t_s"] > 20)
        sample["clock_event_reasons_mask"] |= HW_SLOWDOWN

    result = judged(edited(bf16, slowdown))["stress_no_slowdown_events"]
    assert result.status == Verdict.FAIL and "hw_slowdown" in result.why and result.measured.value == 1


def test_power_below_target_fails(bf16):
    def higher_limit(record):  # EDITED: an enforced limit of 1000 W (the card drew at most 696.8 W)
        record["power_limit_w"] = 1000.0

    result = judged(edited(bf16, higher_limit))["stress_power_target_reached"]
    assert result.status == Verdict.FAIL
    assert result.measured.value == pytest.approx(0.696796)


def test_without_a_stress_step_every_criterion_is_skipped_with_why():
    results = {
        r.name: r for r in evaluate(BundleFacts(view_of({})), resolve(SXM), CRITERIA) if r.name.startswith("stress_")
    }
    assert results and all(r.status == Verdict.SKIP and "stress" in r.why for r in results.values())


def test_a_profile_without_a_known_good_sustained_figure_says_so(bf16):
    profile = resolve("h100-sxm5-80gb")
    result = judged(bf16, profile)["stress_sustained_bf16"]
    assert result.status == Verdict.SKIP and "stress_sustained_min_share" in result.why


def test_the_step_runs_last_with_the_probes_default_or_the_asked_length():
    plan = registry.lab_plan()
    probes = [step for step in plan if step.kind == "probe" and getattr(step, "during", None) is None]
    assert probes[-1].step == "stress"  # the last probe; health under load is taken during it, recorded after
    assert [s.step for s in plan[-3:]] == ["stress", "health-load", "health-diff"]
    assert entry.stress_arguments(RunState()).args == ()
    asked = entry.stress_arguments(RunState({"stress": entry.StressRun(seconds=600.0)}))
    assert asked.args == ("--seconds", "600") and asked.inputs["seconds_from"] == "dossier run --stress-seconds"
    faulty = entry.stress_arguments(RunState({"stress": entry.StressRun(seconds=2.0, inject_fault="gemm")}))
    assert (
        faulty.args == ("--seconds", "2", "--inject-fault", "gemm")
        and "self-test" in faulty.inputs["fault_injected_by"]
    )
    assert entry.STRESS_SECONDS.check(0) == "0: must be positive"
    assert "at most 3000" in entry.STRESS_SECONDS.check(3600)
    assert entry.STRESS_SECONDS.check is probe.seconds_problem  # one limit, declared once (the probe's)


def test_fleet_metrics_read_the_recomputed_headlines(bf16):
    heads = analysis.headlines(bf16)
    metrics = {
        m.name: m.read(heads if m.source == "headlines" else bf16)
        for probe, m in registry.fleet_metrics()
        if probe == "stress"
    }
    assert metrics == {
        "stress_steady_tflops": heads["min_steady_tflops"],
        "stress_burst_over_steady": heads["devices"][0]["burst_over_steady"],
        "stress_result_mismatches": 0,
        "stress_memory_errors": 0,
        "stress_xid_ecc_events": 0,
        "stress_result_digest": metrics["stress_result_digest"],
    }
    assert "an older build" in metrics["stress_result_digest"]["unavailable"]  # recorded before the probe kept a digest


def test_the_report_section_names_burst_and_sustained_with_clock_and_cap(bf16):
    text = table.render_in_bundle(bf16, {"roofline": h200_raw("roofline")})
    assert (
        "| GPU0 (NVIDIA H200) | 685.8 | 676.9 | 1.013 | after 0.235 s | 692.7 / 696.8 of 700 W (target reached)" in text
    )
    assert "sw_power_cap 454" in text and "Verdict: **pass**" in text
    # NVML's reasons refresh every ~100 ms and stay set after the cap lets go: "flagged", not "engaged"
    assert (
        "| roofline burst best (down-prefill-2048) | 798.7 | median call of a 30.7 ms window | 1635 | flagged "
        "(sw_power_cap) |" in text
    )
    assert "| stress steady, GPU0 (8192x8192x16384) | 676.9 | median of the second half of 45 s | 1470 |" in text
    assert "Burst best / lowest steady: 1.180" in text
    assert "no burst to set beside" in table.render_in_bundle(bf16, {})


def test_dossier_stress_exits_1_naming_each_failed_check(bf16, tmp_path, capsys):
    from harness.commands.probe import write_plots
    from harness.errors import CheckFailed

    def flipped(record):  # EDITED as in the result-mismatch test
        record["gemm"]["buckets"][3]["mismatched_elements"][2] = 1

    args = type("Args", (), {"output": tmp_path / "stress.json"})()
    with pytest.raises(CheckFailed, match=r"1 check\(s\) failed: GPU0 \(NVIDIA H200\): result_check: 1 of 13337"):
        entry.finish(args, edited(bf16, flipped))
    entry.finish(args, bf16)  # a passing run: no exception
    write_plots(entry.SPEC, bf16, tmp_path / "stress")  # what `dossier stress` writes beside its JSON
    assert (tmp_path / "stress.png").exists()
    assert "GPU0 (NVIDIA H200): burst 685.8, steady 676.9 TFLOPS" in capsys.readouterr().err
