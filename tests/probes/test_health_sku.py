"""SKU and form factor from the recorded H200 facts, and the torch -> NVML mapping."""

import copy

from harness.analysis.device_mapping import map_torch_to_nvml, normalise_uuid
from harness.probes.devices import cpulist, identify
from tests.h200_capture import document, nvidia_smi_xml, nvml_fields


def test_recorded_h200_is_identified_as_sxm():
    for nvml in (nvidia_smi_xml(), nvml_fields()):
        sku = document(nvml, [1])["devices"][0]["sku"]
        assert sku["id"] == "h200-sxm-141gb" and sku["form_factor"] == "SXM", sku
        assert "0x2335" in sku["evidence"]


def test_a_different_device_id_is_not_called_sxm():
    device = document(nvidia_smi_xml(), [1])["devices"][0]
    sku = identify("0x233b10de", device["memory_total_mib"], 600.0)
    assert sku["id"] == "h200-nvl-141gb"
    unknown = identify("0x99990000", 1024.0, 100.0)
    assert unknown["id"] is None and "not in the catalogue" in unknown["evidence"]


def test_unreadable_device_id_gives_the_reason():
    sku = identify({"unavailable": "NVMLError_GpuIsLost: GPU is lost"}, None, None)
    assert sku["id"] is None and "GpuIsLost" in sku["evidence"]


def test_torch_uuid_form_maps_to_nvml():
    facts = document(nvidia_smi_xml(), [1])
    nvml_uuid = facts["devices"][0]["uuid"]
    torch_form = [{"torch_index": 0, "uuid": nvml_uuid.removeprefix("GPU-"), "pci_bus_id": "bogus"}]
    assert map_torch_to_nvml(torch_form, facts["devices"]) == [
        {"torch_index": 0, "nvml_index": 0, "matched_by": "uuid"}
    ]
    by_bus = [{"torch_index": 0, "uuid": {"unavailable": "old torch"}, "pci_bus_id": "0000:00:06.0"}]
    assert map_torch_to_nvml(by_bus, facts["devices"])[0]["matched_by"] == "pci_bus_id"
    stranger = copy.deepcopy(by_bus)
    stranger[0]["pci_bus_id"] = "0000:99:00.0"
    assert "unavailable" in map_torch_to_nvml(stranger, facts["devices"])[0]["nvml_index"]
    assert normalise_uuid("GPU-ABC") == "GPU-abc"


def test_cpulist_from_affinity_words():
    assert cpulist([0xFFFF]) == "0-15"
    assert cpulist([0b1011, 1]) == "0-1,3,64"
    assert cpulist([0]) == ""


def test_nvml_index_by_uuid_accepts_either_spelling_and_never_guesses():
    from harness.analysis.device_mapping import nvml_index_by_uuid

    nvml = {0: "GPU-11111111-aaaa", 1: "GPU-ebdc8522-46d8", 2: {"unavailable": "NVMLError_Unknown"}}
    assert nvml_index_by_uuid("EBDC8522-46D8", nvml) == 1  # torch's bare, any-case form
    assert nvml_index_by_uuid("GPU-11111111-AAAA", nvml) == 0
    assert nvml_index_by_uuid("GPU-22222222-bbbb", nvml) is None
    assert nvml_index_by_uuid("", nvml) is None and nvml_index_by_uuid(None, nvml) is None
