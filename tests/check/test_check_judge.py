"""`dossier check`'s judgement on real H200 readings (tests/check_support.py: the reader's own code on
the lead's node-state captures, tests/fixtures/h200/check/), each fail path changing one recorded
fact, and the rules for what cannot be read."""

from __future__ import annotations

import pytest

from harness.analysis.verdict import Verdict, overall
from harness.check.expectation import Expectation
from harness.check.judge import NAMES, judge
from harness.check.result import first_problem, lines
from tests.check_support import changed, reading

H200 = "h200-sxm-141gb"
EXPECT = Expectation(gpus=1, sku=H200, sku_from="--sku")


def verdicts(findings) -> dict[str, Verdict]:
    return {f.name: f.verdict for f in findings}


def finding(findings, name):
    return next(f for f in findings if f.name == name)


def device(r):
    return r["devices"][0]


def test_the_idle_h200_is_healthy_and_says_what_it_could_not_judge():
    findings = judge(reading("node-idle.json"), EXPECT)
    assert [f.name for f in findings] == list(NAMES)
    assert verdicts(findings) == {
        "gpu_count": Verdict.PASS,
        "driver": Verdict.PASS,
        "gpu_sku": Verdict.PASS,
        "xid_events": Verdict.PASS,
        "row_remaps": Verdict.PASS,
        "ecc": Verdict.PASS,
        "pcie_width": Verdict.PASS,
        "pcie_generation": Verdict.PASS,
        "clock_events": Verdict.PASS,
        "persistence_mode": Verdict.PASS,
        # what the card answers NotSupported (a single-GPU VM that remaps rows) or was not asked
        "retired_pages": Verdict.SKIP,
        "nvlink": Verdict.SKIP,
        "gpu_processes": Verdict.SKIP,
    }
    assert overall(f.verdict for f in findings) == Verdict.PASS
    assert "driver 580.159.04" in finding(findings, "driver").message
    assert "359 kernel log records, 5 from the driver" in finding(findings, "xid_events").message
    assert "remaps rows instead" in finding(findings, "retired_pages").message
    assert lines("gpu1", findings) == ["gpu1 | PASS: healthy [10 pass, 3 skip]"]


def test_the_h200_after_load_holds_gen5_and_is_healthy():
    findings = judge(
        reading("node-after.json"), Expectation(gpus=1, sku=H200, pcie_min_width=16, pcie_min_generation=5)
    )
    assert overall(f.verdict for f in findings) == Verdict.PASS
    assert finding(findings, "pcie_generation").message == "GPU0: Gen5 of Gen5"


def _set(path, value):
    def edit(r):
        target = device(r)
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


FAILS = {  # check -> (the one recorded fact changed, what the finding must say)
    "row_remaps": (_set(("ecc", "remapped_rows_pending"), True), "remap pending: True"),
    "ecc": (_set(("ecc", "volatile_uncorrected_errors"), 2), "volatile_uncorrected_errors = 2"),
    "pcie_width": (_set(("pcie", "current_width"), 8), "x8 of x16"),
    "clock_events": (
        _set(("clock_event_reasons",), {"mask": 0x41, "names": ["gpu_idle", "hw_thermal_slowdown"]}),
        "hw_thermal_slowdown",
    ),
    "persistence_mode": (_set(("modes", "persistence"), "disabled"), "persistence mode disabled"),
    "gpu_sku": (_set(("pci_device_id",), "0x233010de"), "expected h200-sxm-141gb"),
}


@pytest.mark.parametrize("check", sorted(FAILS))
def test_one_changed_fact_fails_its_check_and_the_node(check):
    edit, words = FAILS[check]
    findings = judge(changed(reading(), edit), EXPECT)
    failed = [f for f in findings if f.verdict == Verdict.FAIL]
    assert [f.name for f in failed] == [check], failed
    assert words in failed[0].message
    assert overall(f.verdict for f in findings) == Verdict.FAIL
    assert first_problem(findings).name == check
    assert lines("n1", findings)[0].startswith(f"ERROR: dossier check: Health check failed: {check}: GPU0: ")


def test_the_rows_a_gpu_may_have_remapped_are_bounded_by_the_catalogue():
    findings = judge(changed(reading(), _set(("ecc", "remapped_rows_uncorrected"), 513)), EXPECT)
    assert "513 rows remapped for uncorrectable errors, above 512" in finding(findings, "row_remaps").message
    assert (
        finding(
            judge(changed(reading(), _set(("ecc", "remapped_rows_uncorrected"), 512)), EXPECT), "row_remaps"
        ).verdict
        == Verdict.PASS
    )


def test_a_full_retirement_table_with_a_retirement_pending_fails():
    full = {"double_bit_ecc": 40, "multiple_single_bit_ecc": 22, "pending": True}
    assert (
        finding(judge(changed(reading(), _set(("retired_pages",), full)), EXPECT), "retired_pages").verdict
        == Verdict.FAIL
    )
    assert (
        finding(
            judge(changed(reading(), _set(("retired_pages",), {**full, "pending": False})), EXPECT), "retired_pages"
        ).verdict
        == Verdict.PASS
    )


def test_the_generation_is_judged_only_where_the_link_holds_it():
    idle_low = changed(reading("node-idle.json"), _set(("pcie", "current_gen"), 1))  # gpu_idle is active there
    found = finding(judge(idle_low, EXPECT), "pcie_generation")
    assert found.verdict == Verdict.SKIP and "while idle" in found.message
    working_low = changed(reading("node-after.json"), _set(("pcie", "current_gen"), 4))  # no gpu_idle: at work
    assert finding(judge(working_low, EXPECT), "pcie_generation").verdict == Verdict.FAIL
    capped = changed(reading(), _set(("pcie", "max_gen"), 4))
    capped = changed(capped, _set(("pcie", "current_gen"), 4))
    assert "the slot caps the link below the GPU's Gen5" in finding(judge(capped, EXPECT), "pcie_generation").message
    profile = Expectation(gpus=1, pcie_min_width=16, pcie_min_generation=6)
    assert "below the profile's Gen6" in finding(judge(reading(), profile), "pcie_generation").message


def test_gpu_count_against_the_expectation_and_the_pci_bus():
    assert (
        "expected 2 GPU(s) (--expect-gpus), NVML lists 1"
        in finding(judge(reading(), Expectation(gpus=2)), "gpu_count").message
    )
    # Without --expect-gpus every NVIDIA GPU on the bus is expected: one that NVML cannot see fails.
    second = {"address": "0000:00:07.0", "device_id": "0x2335", "class": "0x030200"}
    fallen = changed(reading(), lambda r: r["pci_gpus"].append(second))
    found = finding(judge(fallen, Expectation(sku=H200, sku_from="--sku")), "gpu_count")
    assert found.verdict == Verdict.FAIL and "every NVIDIA GPU on the PCI bus" in found.message


def test_a_gpu_the_driver_lost_fails_and_any_other_unreadable_field_cannot_be_judged():
    lost = {"unavailable": "NVMLError_GpuIsLost: GPU is lost"}
    found = finding(judge(changed(reading(), _set(("ecc", "mode_current"), lost)), EXPECT), "ecc")
    assert found.verdict == Verdict.FAIL and "the GPU is lost" in found.message
    odd = {"unavailable": "NVMLError_Unknown: Unknown Error"}
    findings = judge(changed(reading(), _set(("modes", "persistence"), odd)), EXPECT)
    assert finding(findings, "persistence_mode").verdict == Verdict.INCOMPLETE
    assert overall(f.verdict for f in findings) == Verdict.INCOMPLETE  # never healthy for what it could not read
    assert lines("n1", findings)[0].startswith("ERROR: dossier check: Cannot judge: persistence_mode: GPU0: unreadable")
    assert lines("n1", findings)[-1].startswith("n1 | INCOMPLETE: cannot judge (persistence_mode)")


def test_an_unreadable_kernel_log_is_not_a_clean_one():
    denied = {
        "unavailable": "/dev/kmsg: PermissionError: [Errno 1] Operation not permitted: '/dev/kmsg' "
        "(root or CAP_SYSLOG needed when kernel.dmesg_restrict=1)"
    }
    findings = judge(changed(reading(), lambda r: r.update(kernel_log=denied)), EXPECT)
    found = finding(findings, "xid_events")
    assert found.verdict == Verdict.INCOMPLETE and "CAP_SYSLOG" in found.message
    assert overall(f.verdict for f in findings) == Verdict.INCOMPLETE


def test_the_driver_against_a_minimum_and_the_loaded_module():
    assert finding(judge(reading(), Expectation(gpus=1, min_driver="580.159.04")), "driver").verdict == Verdict.PASS
    low = finding(judge(reading(), Expectation(gpus=1, min_driver="580.160")), "driver")
    assert low.verdict == Verdict.FAIL and "below the minimum 580.160" in low.message
    other = {"version": "570.86.15", "banner": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15"}
    found = finding(judge(changed(reading(), lambda r: r.update(kernel_module=other)), EXPECT), "driver")
    assert found.verdict == Verdict.FAIL and "differ" in found.message


def test_a_gpu_node_whose_driver_is_not_loaded_is_sick():
    no_nvml = {"unavailable": "no NVIDIA driver: NVMLError_DriverNotLoaded: Driver Not Loaded"}
    no_module = {"unavailable": "/proc/driver/nvidia/version: FileNotFoundError: [Errno 2] No such file or directory"}
    r = changed(reading(), lambda r: r.update(nvml=no_nvml, devices=no_nvml, kernel_module=no_module))
    findings = judge(r, EXPECT)
    assert verdicts(findings)["driver"] == Verdict.FAIL
    assert verdicts(findings)["gpu_count"] == Verdict.INCOMPLETE  # the bus lists one, as expected; NVML cannot count
    assert overall(f.verdict for f in findings) == Verdict.FAIL


def test_nvlink_links_down_and_an_sxm_gpu_without_nvlink_beside_others():
    links = [
        {"link": 0, "active": True, "remote_pci_bus_id": "00000000:07:00.0"},
        {"link": 1, "active": False, "remote_pci_bus_id": {"unavailable": "link inactive: no remote end"}},
    ]
    found = finding(judge(changed(reading(), _set(("nvlink",), links)), EXPECT), "nvlink")
    assert found.verdict == Verdict.FAIL and "links [1] inactive" in found.message
    two = changed(reading(), lambda r: r["devices"].append({**r["devices"][0], "nvml_index": 1}))
    found = finding(judge(two, Expectation(gpus=2)), "nvlink")
    assert found.verdict == Verdict.FAIL and "SXM GPU beside others reports no NVLink" in found.message


def test_processes_fail_only_when_asked():
    held = [{"pid": 4242, "kind": "compute", "name": "python3", "used_memory_mib": 1024.0}]
    r = changed(reading(), _set(("processes",), held))
    assert finding(judge(r, EXPECT), "gpu_processes").verdict == Verdict.SKIP
    found = finding(judge(r, Expectation(gpus=1, no_gpu_processes=True)), "gpu_processes")
    assert found.verdict == Verdict.FAIL and "pid 4242 (python3, 1024.0 MiB)" in found.message


def test_a_node_without_gpus_passes_only_when_told_to_expect_none():
    none = {"unavailable": "NVML library not found: NVMLError_LibraryNotFound: NVML Shared Library Not Found"}
    cpu = changed(reading(), lambda r: r.update(nvml=none, devices=none, pci_gpus=[], kernel_module=none))
    findings = judge(cpu, Expectation(gpus=0))
    assert verdicts(findings)["gpu_count"] == Verdict.PASS
    assert {v for n, v in verdicts(findings).items() if n != "gpu_count"} == {Verdict.SKIP}
    assert overall(f.verdict for f in findings) == Verdict.PASS
    expecting = judge(cpu, Expectation(gpus=1))
    assert verdicts(expecting)["gpu_count"] == Verdict.FAIL
    assert verdicts(expecting)["row_remaps"] == Verdict.INCOMPLETE  # no GPU readable: not passed
    assert overall(f.verdict for f in expecting) == Verdict.FAIL


def test_the_overall_rule_of_the_one_vocabulary():
    assert overall([Verdict.PASS, Verdict.WARN, Verdict.SKIP]) == Verdict.WARN
    assert overall([Verdict.WARN, Verdict.INCOMPLETE, Verdict.PASS]) == Verdict.INCOMPLETE
    assert overall([Verdict.INCOMPLETE, Verdict.FAIL]) == Verdict.FAIL
    assert overall([Verdict.SKIP, Verdict.SKIP]) == Verdict.INCOMPLETE  # nothing judged
    assert overall([]) == Verdict.INCOMPLETE


def test_a_sku_expected_without_a_count_needs_at_least_one_gpu():
    none = {"unavailable": "NVML library not found: NVMLError_LibraryNotFound: NVML Shared Library Not Found"}
    cpu = changed(reading(), lambda r: r.update(nvml=none, devices=none, pci_gpus=[], kernel_module=none))
    findings = judge(cpu, Expectation(sku=H200, sku_from="--profile h200-sxm-141gb"))
    found = finding(findings, "gpu_count")
    assert found.verdict == Verdict.FAIL and "at least one: h200-sxm-141gb is expected" in found.message
    assert overall(f.verdict for f in findings) == Verdict.FAIL
