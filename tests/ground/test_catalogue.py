"""The GPU catalogue: valid against its schema, complete, and SKU matching that refuses other variants."""

import copy

import pytest

from harness import catalogue
from harness.probes.bandwidth.device import reference
from harness.schemas import violations

REQUIRED = {
    "h100-sxm5-80gb",
    "h100-pcie-80gb",
    "h100-nvl-94gb",
    "h200-sxm-141gb",
    "h200-nvl-141gb",
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "l40s-48gb",
    "l4-24gb",
    "b200-180gb",
    "gh200-96gb",
}
DTYPES = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"}
H200_FACTS = ("0x233510DE", 143771, 700.0)  # tests/fixtures/h200 nvml-fields / nvidia-smi query


def test_catalogue_validates_against_its_schema():
    assert violations("catalogue", catalogue.load()) == []


def test_schema_rejects_a_sparse_figure_without_a_number_or_reason():
    broken = copy.deepcopy(catalogue.load())
    broken["skus"][0]["published"]["dense_tflops"]["fp8"] = {"n/a": True}
    del broken["skus"][0]["acceptance"]
    paths = {v.path for v in violations("catalogue", broken)}
    assert "/skus/0/published/dense_tflops/fp8" in paths and "/skus/0" in paths


def test_every_required_sku_is_there_with_every_dtype():
    by_id = {s["id"]: s for s in catalogue.skus()}
    assert REQUIRED <= set(by_id)
    for sku in by_id.values():
        assert set(sku["published"]["dense_tflops"]) == DTYPES
        assert sku["published"]["memory_bandwidth_gbps"] > 0


def test_ampere_fp8_is_unsupported_with_a_reason_not_a_number():
    for sku_id in ("a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb"):
        fp8 = catalogue.by_id(sku_id)["published"]["dense_tflops"]["fp8"]
        assert set(fp8) == {"unsupported"} and "FP8" in fp8["unsupported"]


def test_dense_peaks_are_half_the_sparse_sheet_figures():
    peaks = catalogue.by_id("h200-sxm-141gb")["published"]["dense_tflops"]
    assert peaks["bf16"] == 1979 / 2 and peaks["fp8"] == 3958 / 2
    assert "halved" in catalogue.by_id("h200-sxm-141gb")["published"]["dense_rule"]


def test_pci_ids_are_unique_per_sku():
    seen = {}
    for sku in catalogue.skus():
        for pci in sku["pci_device_ids"]:
            assert pci not in seen, f"{pci} in {seen.get(pci)} and {sku['id']}"
            seen[pci] = sku["id"]


def test_each_sku_identifies_itself_from_its_own_facts():
    for sku in catalogue.skus():
        found = catalogue.identify(sku["pci_device_ids"][0], sku["memory_gib"] * 1024, sku["power_limit_w"])
        assert found.sku_id == sku["id"], found.evidence


def test_the_lent_h200_is_the_sxm_sku():
    found = catalogue.identify(*H200_FACTS)
    assert found.sku_id == "h200-sxm-141gb"
    assert "0x2335" in found.evidence


def test_h200_known_goods_come_from_the_baseline():
    sku = catalogue.by_id("h200-sxm-141gb")
    assert catalogue.primary_known_good(sku, "hbm_bandwidth", kernel="copy")["value"] == 4234
    assert catalogue.primary_known_good(sku, "hbm_bandwidth", kernel="triad")["value"] == 4379
    gemm = {
        d: catalogue.primary_known_good(sku, "gemm", dtype=d)["value"] for d in ("bf16", "fp16", "fp8", "fp32", "tf32")
    }
    assert gemm == {"bf16": 765.1, "fp16": 720.0, "fp8": 1480.6, "fp32": 51.0, "tf32": 394.9}
    assert "repeat_spread_max" not in sku["acceptance"]  # the catalogue's rule, written once (below)


def test_rules_are_written_once_with_their_source_and_default_the_profiles():
    """The lab's repeat spread and known-good tolerance, and the stress power target, are the
    catalogue's rules: the analysis applies them and every SKU's profile takes them as thresholds."""
    from harness.analysis.bandwidth import figures as bandwidth
    from harness.analysis.stress import telemetry
    from tests.accept_support import resolve

    assert catalogue.rule("repeat_spread_max") == bandwidth.REPEAT_SPREAD_MAX == 0.05
    assert catalogue.rule("known_good_tolerance") == bandwidth.KNOWN_GOOD_TOLERANCE == 0.15
    assert catalogue.rule("stress_power_target_min_share") == telemetry.POWER_TARGET_RATIO == 0.9
    assert "lab M1 (Profile Your Own Rig), success criterion 2" in catalogue.rule_source("repeat_spread_max")
    for sku in catalogue.skus():
        thresholds = resolve(sku["id"]).thresholds
        assert thresholds["repeat_spread_max"] == 0.05 and thresholds["stress_power_target_min_share"] == 0.9


def test_h200_nvl_is_refused_against_the_sxm_known_good():
    ok, why = catalogue.comparable("h200-nvl-141gb", "h200-sxm-141gb")
    assert not ok
    assert "PCIe (NVL)" in why and "SXM" in why and "not interchangeable" in why


def test_probe_reference_refuses_another_variant_and_uses_its_own():
    nvl = {"sku_id": "h200-nvl-141gb", "evidence": "test"}
    refused = reference("cuda", nvl, None, "h200-sxm-141gb", "copy")
    assert refused["comparable"] is False and refused["known_good_gbps"] is None
    assert "not interchangeable" in refused["why"]
    assert refused["spec_gbps"] == 4800 and refused["spec_source"].startswith("catalogue")
    sxm = {"sku_id": "h200-sxm-141gb", "evidence": "test"}
    own = reference("cuda", sxm, 4900.0, None, "copy")
    assert own["comparable"] and own["known_good_gbps"] == 4234
    assert own["spec_gbps"] == 4900.0 and own["spec_source"] == "--spec-gbps"


def test_unknown_sku_and_cpu_have_no_known_good():
    unknown = reference(
        "cuda", {"sku_id": None, "evidence": "PCI device id 0x9999 is not in the catalogue"}, None, None, "copy"
    )
    assert unknown["comparable"] is False and "unknown" in unknown["why"] and unknown["spec_gbps"] is None
    cpu = reference("cpu", None, None, None, "copy")
    assert "no reference for host memory" in cpu["why"]


@pytest.mark.parametrize("sku_id", sorted(REQUIRED - {"h200-sxm-141gb"}))
def test_skus_without_measurements_say_so(sku_id):
    sku = catalogue.by_id(sku_id)
    assert sku["known_good"] == [] and "no known-good" in sku["known_good_note"]
