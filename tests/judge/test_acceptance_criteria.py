"""Each acceptance criterion's pass and fail path on recorded H200 data (tests/accept_support.py).

The pass path is the data as recorded; each fail path changes one recorded fact and rebuilds the
document through the probe's own code, so the document stays what a probe would have written.
"""

import pytest

from harness import registry
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from tests.accept_support import (
    apply_file,
    by_args,
    h200_bandwidth,
    h200_documents,
    h200_health,
    h200_raw,
    h200x2_allreduce,
    recorded_cpu,
    resolve,
    view_of,
)
from tests.h200_capture import SM

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

SXM = "h200-sxm-141gb"
REQUIRED = {
    "sku_matches_profile",
    "bandwidth_plateau",
    "repeat_spread",
    "ecc_uncorrectable_zero",
    "row_remaps_clean",
    "pcie_link_at_max_under_load",
    "clocks_rise_under_load",
    "no_unexpected_process",
}
# the configuration the catalogue's H200 SXM states (harness/data/gpus.json), as the recorded card had it
CONFIG_PASSED = {"config_persistence", "config_mig", "config_power_limit", "config_application_clocks"}


def judged(documents, profile=None):
    return {r.name: r for r in evaluate(BundleFacts(view_of(documents)), profile or resolve(SXM), CRITERIA)}


@pytest.fixture(scope="module")
def recorded():
    return judged(h200_documents())


def test_recorded_h200_passes_every_required_criterion(recorded):
    assert {n for n, r in recorded.items() if r.status == Verdict.PASS} == REQUIRED | CONFIG_PASSED
    for name in REQUIRED:
        r = recorded[name]
        assert r.required and r.evidence and r.threshold is not None and r.measured.unit, name


def test_recorded_figures_are_the_baseline_ones(recorded):
    assert recorded["bandwidth_plateau"].measured.value == pytest.approx(4254, abs=0.5)  # median of 1/4/8 GiB
    assert recorded["bandwidth_plateau"].threshold.value == pytest.approx(0.85 * 4234)
    assert recorded["repeat_spread"].measured.value == pytest.approx((4281 - 4213) / 4254)
    assert recorded["clocks_rise_under_load"].measured.value == 1365  # nvidia-smi -q under the GEMM load
    assert recorded["pcie_link_at_max_under_load"].measured.value == "Gen5 x16"
    assert recorded["ecc_uncorrectable_zero"].measured.value == 0
    assert "raw/bandwidth.json sweep[].iteration_times_s" in recorded["bandwidth_plateau"].evidence


def test_what_this_bundle_lacks_and_is_not_required_is_skipped_with_why(recorded):
    for name in ("gemm_bf16", "gemm_fp16", "gemm_fp8", "gemm_tf32", "gemm_fp32", "allreduce_busbw"):
        assert recorded[name].status == Verdict.SKIP and not recorded[name].required
        assert "not run" in recorded[name].why
    assert "gemm_fp64" not in recorded  # a share but no known-good and not measured: no row


def test_h200_nvl_bundle_against_the_sxm_profile_fails_naming_the_form_factor():
    def as_nvl(answers):
        answers["nvmlDeviceGetPciInfo_v3"].pciDeviceId = 0x233B10DE
        answers["nvmlDeviceGetPowerManagementDefaultLimit"] = 600_000
        answers["nvmlDeviceGetEnforcedPowerLimit"] = 600_000

    idle, load = h200_health(edit_idle=as_nvl, edit_load=as_nvl)
    assert idle["devices"][0]["sku"]["id"] == "h200-nvl-141gb"
    result = judged({"health": idle, "health-load": load, "bandwidth": h200_bandwidth(sku_id="h200-nvl-141gb")})[
        "sku_matches_profile"
    ]
    assert result.status == Verdict.FAIL
    assert "h200-nvl-141gb is not h200-sxm-141gb" in result.why and "form factor" in result.why


def test_slower_card_fails_the_bandwidth_share():
    documents = {**h200_documents(), "bandwidth": h200_bandwidth(scale=0.8)}
    result = judged(documents)["bandwidth_plateau"]
    assert result.status == Verdict.FAIL and result.measured.value == pytest.approx(0.8 * 4254, abs=0.5)
    assert "below" in result.why


def test_one_slow_repeat_fails_the_spread():
    documents = {**h200_documents(), "bandwidth": h200_bandwidth(repeat_scale=(1.0, 0.9, 1.0))}
    result = judged(documents)["repeat_spread"]
    assert result.status == Verdict.FAIL and result.measured.value > 0.05


def test_an_uncorrectable_ecc_error_under_load_fails():
    documents = h200_documents(edit_load=lambda a: by_args(a, "nvmlDeviceGetTotalEccErrors", (1, 1), 2))
    result = judged(documents)["ecc_uncorrectable_zero"]
    assert result.status == Verdict.FAIL and result.measured.value == 2
    assert "aggregate_uncorrected_errors = 2" in result.why


def test_a_pending_row_remap_fails():
    documents = h200_documents(edit_idle=lambda a: a.update(nvmlDeviceGetRemappedRows=(0, 0, 1, 0)))
    result = judged(documents)["row_remaps_clean"]
    assert result.status == Verdict.FAIL and "remap pending" in result.why


@pytest.mark.parametrize(
    "call, value, words",
    [
        ("nvmlDeviceGetCurrPcieLinkWidth", 8, "narrower"),
        ("nvmlDeviceGetCurrPcieLinkGeneration", 4, "while working"),
    ],
)
def test_a_pcie_link_below_its_maximum_under_load_fails(call, value, words):
    result = judged(h200_documents(edit_load=lambda a: a.update({call: value})))["pcie_link_at_max_under_load"]
    assert result.status == Verdict.FAIL and words in result.why


def test_a_slot_below_the_skus_generation_fails_against_the_catalogue():
    def gen4_slot(answers):  # a Gen4 slot: the link's maximum is Gen4, and it runs at it
        answers.update(
            nvmlDeviceGetCurrPcieLinkGeneration=4,
            nvmlDeviceGetMaxPcieLinkGeneration=4,
            nvmlDeviceGetGpuMaxPcieLinkGeneration=4,
        )

    result = judged(h200_documents(edit_load=gen4_slot))["pcie_link_at_max_under_load"]
    assert result.status == Verdict.FAIL and "Gen5" in result.why


def test_clocks_that_do_not_rise_under_load_fail():
    documents = h200_documents(edit_load=lambda a: by_args(a, "nvmlDeviceGetClockInfo", (SM,), 345))
    result = judged(documents)["clocks_rise_under_load"]
    assert result.status == Verdict.FAIL and result.measured.value == 345


def test_a_process_the_harness_did_not_start_fails_and_is_named():
    result = judged(h200_documents(load_pids=[999999]))["no_unexpected_process"]
    assert result.status == Verdict.FAIL and result.measured.value == 1
    assert "pid 417" in result.measured.text


def test_required_criteria_without_their_step_are_incomplete_saying_not_measured():
    documents = h200_documents()
    del documents["health-load"]
    results = judged(documents)
    for name in ("pcie_link_at_max_under_load", "clocks_rise_under_load", "no_unexpected_process"):
        assert (
            results[name].status == Verdict.INCOMPLETE
            and "not measured, and the profile requires it" in results[name].why
        )
    assert results["ecc_uncorrectable_zero"].status == Verdict.PASS  # the idle reading still counts


def with_known_good_gemm(dtype, tflops):
    return apply_file(resolve(SXM), {"sku_id": SXM, "known_good": {"gemm_tflops": {dtype: tflops}}}, "test profile")


@pytest.mark.parametrize("known_good, status", [(None, Verdict.PASS), (1000.0, Verdict.FAIL)])
def test_gemm_of_the_real_h200_roofline_against_a_known_good_figure(known_good, status):
    """The H200 dossier's own bf16 roofline through the real analysis: its best GEMM (798.7 TFLOPS,
    down-prefill-2048) against the catalogue's mamf-finder 765.1 passes; against a 1000 TFLOPS
    known-good unit it is below 85%."""
    profile = resolve(SXM) if known_good is None else with_known_good_gemm("bf16", known_good)
    results = judged({**h200_documents(), "roofline": h200_raw("roofline")}, profile)
    row = results["gemm_bf16"]
    assert row.status == status
    assert row.measured.value == pytest.approx(798.70, abs=0.01) and "down-prefill-2048" in row.measured.text
    assert row.threshold.value == pytest.approx(0.85 * (known_good or 765.1))
    assert results["gemm_fp16"].status == Verdict.SKIP and "measured bf16 only" in results["gemm_fp16"].why


def with_allreduce_reference(share=0.8, busbw=400.0, world=2):
    return apply_file(
        resolve(SXM),
        {
            "sku_id": SXM,
            "thresholds": {"allreduce_busbw_min_share": share},
            "known_good": {"allreduce_busbw_gbps": {str(world): busbw}},
        },
        "test profile",
    )


@pytest.mark.parametrize("known_good, status", [(326.57, Verdict.PASS), (500.0, Verdict.FAIL)])
def test_allreduce_busbw_of_two_real_h200s(known_good, status):
    """The all-reduce probe on two NVLink H200s: 327.6 GB/s busbw at 1 GiB, against nccl-tests'
    326.57 (passes at 80%) and against a 500 GB/s unit (below 400)."""
    documents = {**h200_documents(), "allreduce": h200x2_allreduce()}
    result = judged(documents, with_allreduce_reference(busbw=known_good))["allreduce_busbw"]
    assert result.status == status and result.threshold.value == pytest.approx(0.8 * known_good)
    assert result.measured.value == pytest.approx(327.56, abs=0.01)


def test_one_gpu_allreduce_is_not_measured_with_the_recorded_limitation():
    documents = {**h200_documents(), "allreduce": h200_raw("allreduce")}  # the one-GPU H200's own document
    result = judged(documents, with_allreduce_reference(world=1))["allreduce_busbw"]
    assert result.status == Verdict.SKIP and "all-reduce needs at least 2" in result.why
    gloo = judged({**h200_documents(), "allreduce": recorded_cpu("allreduce-cpu-gloo.json")})["allreduce_busbw"]
    assert gloo.status == Verdict.SKIP and "gloo" in gloo.why


def cpu_profile(**thresholds):
    return apply_file(
        None,
        {
            "sku_id": "ci-xeon-2core",
            "name": "the CI VM's CPU",
            "form_factor": "VM",
            "thresholds": thresholds,
            "known_good": {"gemm_tflops": {"fp32": {"value": 0.1, "source": "test figure"}}},
        },
        "test profile",
    )


@pytest.mark.parametrize("share, status", [(0.5, Verdict.PASS), (1.5, Verdict.FAIL)])
def test_gemm_from_a_real_roofline_run_through_the_real_analysis(share, status):
    documents = {"roofline": recorded_cpu("roofline-cpu.json")}
    result = judged(documents, cpu_profile(gemm_min_share={"fp32": share}))["gemm_fp32"]
    assert result.status == status
    assert result.measured.value == pytest.approx(0.0988, rel=0.01)  # harness.analysis.roofline's best
    assert "awkward-1000" in result.measured.text


def test_a_real_gloo_allreduce_is_not_the_gpu_interconnect():
    documents = {**h200_documents(), "allreduce": recorded_cpu("allreduce-cpu-gloo.json")}
    result = judged(documents, with_allreduce_reference(world=2))["allreduce_busbw"]
    assert result.status == Verdict.SKIP and "gloo" in result.why and "P2P-disabled" in result.why
