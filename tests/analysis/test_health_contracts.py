"""Each toolchain contract passes on the real H200 facts and fails when a real fact is bad.

The pass path is the capture as recorded; each fail path changes the one recorded fact the
contract judges (named in the test), everything else stays as the card reported it.
"""

import copy

import pytest

from harness.analysis.health import contracts as hc
from tests.h200_capture import document, nvidia_smi_xml, nvml_fields, recorded_pair


@pytest.fixture(scope="module")
def h200():
    idle, _ = recorded_pair("nvidia-smi-q")
    return idle


def judged(facts, name):
    return next(c for c in hc.evaluate(facts) if c["name"] == name)


def changed(facts, mutate):
    facts = copy.deepcopy(facts)
    mutate(facts)
    return facts


def gpu0(facts):
    return facts["devices"][0]


PASSING_ON_H200 = [n for n in hc.NAMES if n != "nvlink_links_up"]

FAILS = {
    "driver_supports_torch_cuda_build": lambda f: f["software"].update(
        cuda_driver_version="12.4", torch_cuda_build="13.0"
    ),
    "torch_sees_every_gpu": lambda f: f.update(torch_device_count=0, torch_devices=[], device_mapping=[]),
    "nccl_loads": lambda f: f["software"].update(
        nccl_version={"unavailable": "AttributeError: module 'torch._C' has no attribute '_nccl_version'"},
        nccl_available=False,
    ),
    "no_mig_or_compute_mode_block": lambda f: gpu0(f)["modes"].update(mig_current="enabled"),
    "ecc_enabled_no_uncorrectable": lambda f: gpu0(f)["ecc"].update(volatile_uncorrected_errors=2),
    "no_pending_or_failed_row_remaps": lambda f: gpu0(f)["ecc"].update(remapped_rows_pending=True),
    "persistence_mode_on": lambda f: gpu0(f)["modes"].update(persistence="disabled"),
    "pcie_link_at_max": lambda f: gpu0(f)["pcie"].update(current_width=8),
    "no_foreign_process": lambda f: gpu0(f).update(
        processes=[{"pid": 417, "kind": "compute", "name": "python3", "used_memory_mib": 874.0}]
    ),
    "clocks_not_locked_below_max": lambda f: gpu0(f)["clocks"].update(applications_graphics_mhz=1410),
    "power_limit_at_default": lambda f: gpu0(f)["power"].update(enforced_limit_w=500.0),
}


@pytest.mark.parametrize("name", PASSING_ON_H200)
def test_contract_passes_on_the_recorded_h200(h200, name):
    result = judged(h200, name)
    assert result["status"] == "pass", result
    assert result["evidence"] and result["remedy"]


@pytest.mark.parametrize("name", sorted(FAILS))
def test_contract_fails_when_its_fact_is_bad(h200, name):
    result = judged(changed(h200, FAILS[name]), name)
    assert result["status"] == "fail", result


def test_every_contract_has_a_fail_path():
    assert set(FAILS) | {"nvlink_links_up"} == set(hc.NAMES)


def test_nvlink_is_not_applicable_on_one_gpu(h200):
    result = judged(h200, "nvlink_links_up")
    assert result == {**result, "status": "not-applicable", "evidence": "one GPU: no NVLink peers"}


def test_nvlink_on_two_recorded_devices():
    """Two copies of the recorded SXM device: NVML's NotSupported on SXM fails; links up pass."""
    facts = document(nvidia_smi_xml(), [1])
    second = copy.deepcopy(gpu0(facts))
    second.update(nvml_index=1)
    facts["devices"].append(second)
    assert judged(facts, "nvlink_links_up")["status"] == "fail"  # SXM devices with no NVLink
    for d in facts["devices"]:
        d["nvlink"] = [{"link": k, "active": True, "remote_pci_bus_id": "00000000:00:07.0"} for k in range(18)]
    assert judged(facts, "nvlink_links_up")["status"] == "pass"
    facts["devices"][1]["nvlink"][3]["active"] = False
    assert "links [3] inactive" in judged(facts, "nvlink_links_up")["evidence"]


def test_pcie_downshift_while_idle_is_not_a_failure_but_under_load_it_is(h200):
    slow = changed(h200, lambda f: gpu0(f)["pcie"].update(current_gen=1))
    assert judged(slow, "pcie_link_at_max")["status"] == "not-applicable"  # gpu_idle active
    slow["mode"] = "under_load"
    assert judged(slow, "pcie_link_at_max")["status"] == "fail"


def test_foreign_process_is_named(h200):
    result = judged(changed(h200, FAILS["no_foreign_process"]), "no_foreign_process")
    assert "pid 417 (python3" in result["evidence"]


def test_harness_own_process_is_not_foreign():
    _, load = recorded_pair("nvidia-smi-q")
    assert judged(load, "no_foreign_process")["status"] == "pass"
    load["harness_pids"] = [1]
    assert judged(load, "no_foreign_process")["status"] == "fail"


def test_cuda_visible_devices_selects_by_uuid_and_catches_bad_tokens(h200):
    uuid = gpu0(h200)["uuid"]
    assert (
        judged(changed(h200, lambda f: f.update(cuda_visible_devices=uuid[:12])), "torch_sees_every_gpu")["status"]
        == "pass"
    )
    hidden = changed(h200, lambda f: f.update(cuda_visible_devices="GPU-00000000", torch_device_count=1))
    assert judged(hidden, "torch_sees_every_gpu")["status"] == "fail"


def test_an_unreadable_torch_to_nvml_mapping_fails_the_order_check_instead_of_passing_it(h200):
    assert judged(h200, "torch_sees_every_gpu")["status"] == "pass"
    unread = changed(
        h200, lambda f: f.update(device_mapping={"unavailable": "torch.cuda.get_device_properties raised"})
    )
    result = judged(unread, "torch_sees_every_gpu")
    assert result["status"] == "fail" and "torch.cuda.get_device_properties raised" in result["evidence"]


def test_minor_version_compatibility_passes_with_a_note(h200):
    result = judged(
        changed(h200, lambda f: f["software"].update(torch_cuda_build="13.1")), "driver_supports_torch_cuda_build"
    )
    assert result["status"] == "pass" and "minor-version" in result["evidence"]


def test_no_gpu_makes_every_contract_not_applicable_with_the_reason():
    facts = {"devices": {"unavailable": "NVML library not found: libnvidia-ml.so.1"}, "software": {}}
    for result in hc.evaluate(facts):
        assert result["status"] == "not-applicable"
        assert "NVML library not found" in result["evidence"]


def test_nvml_fields_capture_passes_too():
    facts = document(nvml_fields(), [1])
    failed = [c for c in facts["contracts"] if c["status"] == "fail"]
    assert failed == []
