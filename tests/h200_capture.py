"""Health facts built from the real H200 captures in tests/fixtures/h200/ (see its README).

`CapturedNvml` stands in for the pynvml module and answers each NVML call with what the real
card answered when it was captured, so the probe's own reading code (device_facts, sample)
runs unchanged on recorded answers. A call the capture did not record raises `NotCaptured`,
which the probe turns into {"unavailable": "NotCaptured: ..."}: nothing is invented.
"""

from __future__ import annotations

import ast
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.analysis.device_mapping import map_torch_to_nvml
from harness.analysis.health.contracts import evaluate
from harness.probes.devices import device_facts, system_facts
from harness.probes.health import attach_topology
from harness.probes.nvml import CLOCK_EVENT_REASONS, sample
from harness.probes.topology import topology_from_output

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "h200"
CAPTURE_KIND = {"nvml-fields": "the nvml-fields capture", "nvidia-smi-q": "the nvidia-smi -q -x capture"}
SM, GRAPHICS, MEM = 1, 0, 2
CORRECTED, UNCORRECTED, VOLATILE, AGGREGATE = 0, 1, 0, 1
# From h200-baseline.md (the image the probes run in); not part of the NVML captures.
BASELINE_SOFTWARE = {
    "torch_version": "2.11.0+cu130",
    "torch_cuda_build": "13.0",
    "cudnn_version": 91900,
    "nccl_version": "2.28.9",
    "nccl_available": True,
    "torch_cuda_available": True,
    "nvidia_ml_py_version": "13.610",
}


class NotCaptured(Exception):
    """The capture did not record this call."""


def recorded_error(text: str) -> Exception:
    """'ERR NVMLError_NotSupported: Not Supported' -> an exception of that class name."""
    name, _, message = text.removeprefix("ERR ").partition(": ")
    return type(name, (Exception,), {})(message)


class ByArgs(dict):
    """Answers that depend on the call's arguments after the handle."""


class CapturedNvml:
    """A pynvml stand-in answering from a capture; `source` names the capture in reasons."""

    NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = GRAPHICS, SM, MEM
    NVML_TEMPERATURE_GPU = 0
    NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = VOLATILE, AGGREGATE
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = CORRECTED, UNCORRECTED
    NVML_NVLINK_MAX_LINKS = 18
    NVML_AFFINITY_SCOPE_NODE = 0
    SYSTEM_CALLS = (
        "nvmlSystemGetDriverVersion",
        "nvmlSystemGetNVMLVersion",
        "nvmlSystemGetCudaDriverVersion",
        "nvmlDeviceGetCount",
    )

    def __init__(self, answers: dict[str, Any], source: str) -> None:
        self.answers, self.source = answers, source

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("nvml"):
            raise AttributeError(name)
        return lambda *args: self._answer(name, args if name in self.SYSTEM_CALLS else args[1:])

    def _answer(self, name: str, args: tuple[Any, ...]) -> Any:
        if name not in self.answers:
            raise NotCaptured(f"{name} was not recorded in {self.source}")
        answer = self.answers[name]
        if isinstance(answer, ByArgs):
            if args not in answer:
                raise NotCaptured(f"{name}{args} was not recorded in {self.source}")
            answer = answer[args]
        if isinstance(answer, Exception):
            raise answer
        return answer


# --- nvml-fields.*.json (nvidia-ml-py 13.610 on the H200, see README) ---------------------


def nvml_fields(name: str = "nvml-fields.idle.json") -> CapturedNvml:
    f = json.loads((FIXTURES / name).read_text())

    def value(v):
        return recorded_error(v) if isinstance(v, str) and v.startswith("ERR ") else v

    answers: dict[str, Any] = {
        "nvmlSystemGetDriverVersion": f["driver"],
        "nvmlSystemGetNVMLVersion": f["nvml"],
        "nvmlSystemGetCudaDriverVersion": f["cuda_driver"],
        "nvmlDeviceGetCount": f["count"],
        "nvmlDeviceGetName": f["name"],
        "nvmlDeviceGetUUID": f["uuid"],
        "nvmlDeviceGetBoardPartNumber": f["board_part"],
        "nvmlDeviceGetVbiosVersion": f["vbios"],
        "nvmlDeviceGetPciInfo_v3": SimpleNamespace(
            busId=f["pci_busid"].encode(), pciDeviceId=int(f["pci_devid"], 16), pciSubSystemId=int(f["pci_subsys"], 16)
        ),
        "nvmlDeviceGetCurrPcieLinkGeneration": f["pcie_gen_cur"],
        "nvmlDeviceGetMaxPcieLinkGeneration": f["pcie_gen_max"],
        "nvmlDeviceGetCurrPcieLinkWidth": f["pcie_width_cur"],
        "nvmlDeviceGetMaxPcieLinkWidth": f["pcie_width_max"],
        "nvmlDeviceGetClockInfo": ByArgs({(SM,): f["clock_sm"], (GRAPHICS,): f["clock_gr"], (MEM,): f["clock_mem"]}),
        "nvmlDeviceGetMaxClockInfo": ByArgs(
            {(SM,): f["maxclock_sm"], (GRAPHICS,): f["maxclock_gr"], (MEM,): f["maxclock_mem"]}
        ),
        "nvmlDeviceGetPowerUsage": f["power_mw"],
        "nvmlDeviceGetEnforcedPowerLimit": f["power_limit_mw"],
        "nvmlDeviceGetPowerManagementDefaultLimit": f["power_default_mw"],
        "nvmlDeviceGetTemperature": ByArgs({(0,): f["temp"]}),
        "nvmlDeviceGetEccMode": f["ecc_mode"],
        "nvmlDeviceGetTotalEccErrors": ByArgs(
            {(UNCORRECTED, VOLATILE): f["ecc_vol_uncorr"], (UNCORRECTED, AGGREGATE): f["ecc_agg_uncorr"]}
        ),
        "nvmlDeviceGetRemappedRows": ast.literal_eval(f["remapped_rows"]),
        "nvmlDeviceGetCurrentClocksEventReasons": f["throttle"],
        "nvmlDeviceGetPerformanceState": f["perf_state"],
        "nvmlDeviceGetPersistenceMode": f["persistence"],
        "nvmlDeviceGetComputeMode": f["compute_mode"],
        "nvmlDeviceGetMigMode": f["mig_mode"],
        "nvmlDeviceGetVirtualizationMode": f["virt_mode"],
        "nvmlDeviceGetComputeRunningProcesses": [
            SimpleNamespace(pid=p["pid"], usedGpuMemory=p["usedGpuMemory"]) for p in f["procs"]
        ],
        "nvmlDeviceGetNumaNodeId": value(f["numa"]),
        "nvmlDeviceGetNvLinkState": ByArgs({(0,): value(f["nvlink0_state"])}),
    }
    return CapturedNvml(answers, CAPTURE_KIND[name.split(".")[0]])


# --- nvidia-smi -q -x (same driver, see README) -------------------------------------------

XML_REASONS = {f"clocks_event_reason_{n}": bit for bit, n in CLOCK_EVENT_REASONS.items()}
XML_REASONS["clocks_event_reason_display_clocks_setting"] = 0x100


def _number(text: str) -> float:
    return float(text.split()[0].rstrip("x"))


def nvidia_smi_xml(name: str = "nvidia-smi-q.idle.xml") -> CapturedNvml:
    root = ET.parse(FIXTURES / name).getroot()
    gpu = root.find("gpu")

    def g(path):
        return gpu.findtext(path).strip()

    def i(path):
        return int(_number(g(path)))

    def mib_bytes(path):
        return i(path) * 2**20

    def mw(path):
        return round(_number(g(path)) * 1000)

    def on(path):
        return int(g(path) in ("Enabled", "Yes"))

    def ecc(kind: str) -> tuple[int, int]:
        e = f"ecc_errors/{kind}/"
        corrected = i(e + "sram_correctable") + i(e + "dram_correctable")
        uncorrected = (
            i(e + "sram_uncorrectable_parity") + i(e + "sram_uncorrectable_secded") + i(e + "dram_uncorrectable")
        )
        return corrected, uncorrected

    mask = sum(
        bit for tag, bit in XML_REASONS.items() if gpu.findtext(f"clocks_event_reasons/{tag}", "").strip() == "Active"
    )
    vol, agg = ecc("volatile"), ecc("aggregate")
    procs = [
        SimpleNamespace(pid=int(p.findtext("pid")), usedGpuMemory=int(_number(p.findtext("used_memory"))) * 2**20)
        for p in gpu.findall("processes/process_info")
        if "C" in p.findtext("type")
    ]
    major, minor = root.findtext("cuda_version").split(".")
    answers: dict[str, Any] = {
        "nvmlSystemGetDriverVersion": root.findtext("driver_version"),
        "nvmlSystemGetCudaDriverVersion": int(major) * 1000 + int(minor) * 10,
        "nvmlDeviceGetCount": int(root.findtext("attached_gpus")),
        "nvmlDeviceGetName": g("product_name"),
        "nvmlDeviceGetUUID": g("uuid"),
        "nvmlDeviceGetBoardPartNumber": g("board_part_number"),
        "nvmlDeviceGetVbiosVersion": g("vbios_version"),
        "nvmlDeviceGetPciInfo_v3": SimpleNamespace(
            busId=g("pci/pci_bus_id").encode(),
            pciDeviceId=int(g("pci/pci_device_id"), 16),
            pciSubSystemId=int(g("pci/pci_sub_system_id"), 16),
        ),
        "nvmlDeviceGetCurrPcieLinkGeneration": i("pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
        "nvmlDeviceGetMaxPcieLinkGeneration": i("pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": i("pci/pci_gpu_link_info/pcie_gen/max_device_link_gen"),
        "nvmlDeviceGetCurrPcieLinkWidth": i("pci/pci_gpu_link_info/link_widths/current_link_width"),
        "nvmlDeviceGetMaxPcieLinkWidth": i("pci/pci_gpu_link_info/link_widths/max_link_width"),
        "nvmlDeviceGetMemoryInfo": SimpleNamespace(
            total=mib_bytes("fb_memory_usage/total"), used=mib_bytes("fb_memory_usage/used")
        ),
        "nvmlDeviceGetClockInfo": ByArgs(
            {(SM,): i("clocks/sm_clock"), (GRAPHICS,): i("clocks/graphics_clock"), (MEM,): i("clocks/mem_clock")}
        ),
        "nvmlDeviceGetMaxClockInfo": ByArgs(
            {
                (SM,): i("max_clocks/sm_clock"),
                (GRAPHICS,): i("max_clocks/graphics_clock"),
                (MEM,): i("max_clocks/mem_clock"),
            }
        ),
        "nvmlDeviceGetApplicationsClock": ByArgs(
            {(GRAPHICS,): i("applications_clocks/graphics_clock"), (MEM,): i("applications_clocks/mem_clock")}
        ),
        "nvmlDeviceGetDefaultApplicationsClock": ByArgs(
            {
                (GRAPHICS,): i("default_applications_clocks/graphics_clock"),
                (MEM,): i("default_applications_clocks/mem_clock"),
            }
        ),
        "nvmlDeviceGetPowerUsage": mw("gpu_power_readings/instant_power_draw"),
        "nvmlDeviceGetEnforcedPowerLimit": mw("gpu_power_readings/current_power_limit"),
        "nvmlDeviceGetPowerManagementDefaultLimit": mw("gpu_power_readings/default_power_limit"),
        "nvmlDeviceGetTemperature": ByArgs({(0,): i("temperature/gpu_temp")}),
        "nvmlDeviceGetPerformanceState": int(g("performance_state").lstrip("P")),
        "nvmlDeviceGetCurrentClocksEventReasons": mask,
        "nvmlDeviceGetEccMode": [on("ecc_mode/current_ecc"), on("ecc_mode/pending_ecc")],
        "nvmlDeviceGetTotalEccErrors": ByArgs(
            {
                (CORRECTED, VOLATILE): vol[0],
                (UNCORRECTED, VOLATILE): vol[1],
                (CORRECTED, AGGREGATE): agg[0],
                (UNCORRECTED, AGGREGATE): agg[1],
            }
        ),
        "nvmlDeviceGetRemappedRows": (
            i("remapped_rows/remapped_row_corr"),
            i("remapped_rows/remapped_row_unc"),
            on("remapped_rows/remapped_row_pending"),
            on("remapped_rows/remapped_row_failure"),
        ),
        "nvmlDeviceGetPersistenceMode": on("persistence_mode"),
        "nvmlDeviceGetComputeMode": {"Default": 0, "Prohibited": 2, "Exclusive_Process": 3}[g("compute_mode")],
        "nvmlDeviceGetMigMode": [on("mig_mode/current_mig"), on("mig_mode/pending_mig")],
        "nvmlDeviceGetVirtualizationMode": {"None": 0, "Pass-Through": 1}[
            g("gpu_virtualization_mode/virtualization_mode")
        ],
        "nvmlDeviceGetComputeRunningProcesses": procs,
    }
    return CapturedNvml(answers, CAPTURE_KIND[name.split(".")[0]])


# --- whole health.json documents ----------------------------------------------------------


def topo_text() -> str:
    return (FIXTURES / "nvidia-smi-topo-m.txt").read_text()


def document(
    nvml: CapturedNvml, harness_pids: list[int], mode: str = "idle", load_pids: list[int] | None = None
) -> dict[str, Any]:
    """A health.json built by the probe's own functions from one capture."""
    not_recorded = {"unavailable": "NotCaptured: host facts were not recorded with the H200 captures"}
    devices = [device_facts(nvml, 0, 0)]
    torch_devices = [
        {
            "torch_index": 0,
            "name": devices[0]["name"],
            "uuid": devices[0]["uuid"],
            "pci_bus_id": devices[0]["pci_bus_id"],
            "total_memory_mib": devices[0]["memory_total_mib"],
            "compute_capability": "9.0",
            "multiprocessor_count": 132,
        }
    ]
    facts: dict[str, Any] = {
        "probe": "health",
        "contract_version": 1,
        "argv": [] if mode == "idle" else ["--under-load", "8"],
        "started_at": "2026-11-29T14:22:05.000000Z",
        "finished_at": "2026-11-29T14:22:06.000000Z",
        "mode": mode,
        "harness_pids": harness_pids,
        "cuda_visible_devices": None,
        "cuda_device_order": None,
        "host": dict.fromkeys(
            (
                "hostname",
                "kernel_release",
                "kernel_version",
                "machine",
                "os",
                "cpu_model",
                "cpu_count_logical",
                "cpu_count_usable",
                "memory_total_mib",
                "python_executable",
            ),
            not_recorded,
        )
        | {
            "python_version": "3.12.3",
            "python_implementation": "CPython",
            "container": {
                "dockerenv": False,
                "containerenv": False,
                "cgroup": not_recorded,
                "cgroup_runtime_words": [],
                "pid_namespace": not_recorded,
            },
            "virtualization": {"hypervisor_cpu_flag": not_recorded, "dmi": not_recorded, "dmi_hypervisor_words": []},
        },
        "software": {**system_facts(nvml), **BASELINE_SOFTWARE},
        "nvml_device_count": nvml.nvmlDeviceGetCount(),
        "torch_device_count": 1,
        "torch_devices": torch_devices,
        "devices": devices,
        "device_mapping": map_torch_to_nvml(torch_devices, devices),
        "topology": topology_from_output(0, topo_text().encode(), b""),
        "sizing": "Built from recorded H200 captures (tests/fixtures/h200/README.md).",
        "limitations": [],
    }
    if mode == "under_load":
        started = 1000.0
        samples = [sample(nvml, 0) for _ in range(3)]
        for n, s in enumerate(samples):  # place the recorded readings inside the load window
            s["monotonic_s"] = started + 1.0 + n
        facts["load"] = {
            "kind": "recorded capture: see tests/fixtures/h200/README.md",
            "requested_s": 8.0,
            "pids": load_pids if load_pids is not None else harness_pids,
            "started_at": "2026-11-29T14:22:05.000000Z",
            "finished_at": "2026-11-29T14:22:13.000000Z",
            "started_monotonic_s": started,
            "finished_monotonic_s": started + 8.0,
            "sample_interval_s": 1.0,
            "devices": [
                {
                    "torch_index": 0,
                    "nvml_index": 0,
                    "gemm_n": 8192,
                    "gemm_dtype": "bfloat16",
                    "copy_mib": 1024.0,
                    "rounds": 1,
                    "gpu_elapsed_s": 8.0,
                    "gemm_flop": 2 * 8192**3,
                    "copy_bytes_moved": 2 * 2**30,
                    "samples": samples,
                }
            ],
        }
    attach_topology(facts)
    facts["contracts"] = evaluate(facts)
    return facts


def recorded_pair(kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(idle, under load) from one pair of captures; the load's pid is the one NVML recorded."""
    if kind == "nvml-fields":
        idle, load = nvml_fields("nvml-fields.idle.json"), nvml_fields("nvml-fields.copy-load.json")
    else:
        idle, load = nvidia_smi_xml("nvidia-smi-q.idle.xml"), nvidia_smi_xml("nvidia-smi-q.load.xml")
    load_pids = [p.pid for p in load.answers["nvmlDeviceGetComputeRunningProcesses"]]
    return document(idle, [os.getpid()]), document(load, load_pids, "under_load")


def real_health_fixtures() -> list[tuple[str, dict[str, Any]]]:
    """health.idle.json / health.load.json captured by `dossier health` on the H200, when present."""
    found = []
    for name in ("health.idle.json", "health.load.json"):
        path = FIXTURES / name
        if path.exists():
            found.append((name, json.loads(path.read_text())))
    return found
