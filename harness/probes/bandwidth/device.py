"""What the bandwidth probe measures on: the device (GPU or host memory), its memory and cache, the
buffer sizes it can hold, the GPU's identity in the catalogue and the published and known-good
figures to compare with."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness import catalogue
from harness.analysis.device_mapping import normalise_uuid
from harness.probes.bandwidth.points import DTYPE_NAME, ELEMENT_BYTES
from harness.probes.contract import ProbeUsageError, attempt, unavailable
from harness.probes.nvml import NvmlSession, handle_by_uuid

SAFE_FRACTION = 0.5  # three buffers within half of the memory free at start
BUFFERS = 3
CUDA_SWEEP_MIB = (4, 64, 256, 1024)  # then powers of two up to the largest safe size
CPU_SWEEP_MIB = (1, 4, 16, 64, 128)  # small on purpose: CI runners have 2 cores


# --- devices -----------------------------------------------------------------------------------


def pick_device(torch: Any, requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise ProbeUsageError(
            f"--device cuda: torch sees no CUDA device (torch {torch.__version__}, CUDA build {torch.version.cuda})"
        )
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def meminfo_bytes(field: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"/proc/meminfo has no {field}")


def cpu_cache() -> dict[str, Any]:
    """The last-level cache from sysfs (the host's counterpart of a GPU's L2)."""
    best: tuple[int, int] | None = None
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
            size = int(text[:-1]) * {"K": 2**10, "M": 2**20, "G": 2**30}[text[-1]] if text[-1].isalpha() else int(text)
        except (OSError, ValueError, KeyError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    if best is None:
        return {
            "level": "LLC",
            "size_bytes": unavailable("no cache sizes under /sys/devices/system/cpu/cpu0/cache"),
            "size_mib": unavailable("no cache sizes in sysfs"),
            "source": "sysfs",
        }
    return {
        "level": f"L{best[0]}",
        "size_bytes": best[1],
        "size_mib": best[1] / 2**20,
        "source": f"/sys/devices/system/cpu/cpu0/cache (L{best[0]}, the last level; shared by all cores)",
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "host CPU (model name not readable from /proc/cpuinfo)"


# --- sizing ------------------------------------------------------------------------------------


def largest_safe_mib(free_bytes: int) -> float:
    return free_bytes * SAFE_FRACTION / BUFFERS / 2**20


def default_sizes(device: str, safe_mib: float) -> list[float]:
    if device == "cpu":
        return [s for s in CPU_SWEEP_MIB if s <= safe_mib]
    sizes: list[float] = [s for s in CUDA_SWEEP_MIB if s <= safe_mib]
    power = 2048
    while power <= safe_mib:
        sizes.append(power)
        power *= 2
    return sizes


def check_sizes(sizes: list[float], total_bytes: int, free_bytes: int, where: str) -> None:
    """Clear errors for sizes the device cannot hold."""
    for size in sizes:
        if not size > 0:
            raise ProbeUsageError(f"--size-mib {size:g}: sizes must be positive")
        if size * 2**20 < ELEMENT_BYTES:
            raise ProbeUsageError(f"--size-mib {size:g}: smaller than one {DTYPE_NAME} element")
        need = BUFFERS * size * 2**20
        if need > total_bytes:
            raise ProbeUsageError(
                f"--size-mib {size:.10g}: {BUFFERS} buffers need {need / 2**20:.0f} MiB "
                f"but {where} has {total_bytes / 2**20:.0f} MiB in all"
            )
        if size > largest_safe_mib(free_bytes):
            raise ProbeUsageError(
                f"--size-mib {size:.10g}: above the largest safe size "
                f"{largest_safe_mib(free_bytes):.0f} MiB ({BUFFERS} buffers within "
                f"{SAFE_FRACTION:.0%} of the {free_bytes / 2**20:.0f} MiB free on {where})"
            )


# --- the GPU's identity and telemetry ----------------------------------------------------------


def nvml_handle(nvml: NvmlSession, torch: Any, index: int) -> tuple[Any, str]:
    """The NVML handle of torch's device `index`, matched by UUID (CUDA_VISIBLE_DEVICES reorders),
    or an unavailable field saying why: never a guess by position, which could name another GPU."""
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return unavailable(f"torch gave no UUID for cuda:{index}, so no NVML device can be matched to it"), ""
    handle = handle_by_uuid(nvml, str(uuid))
    return handle, ("" if isinstance(handle, dict) else f"by UUID {normalise_uuid(str(uuid))}")


def identify_gpu(nvml: NvmlSession, handle: Any) -> dict[str, Any]:
    p = nvml.pynvml
    pci = attempt(lambda: p.nvmlDeviceGetPciInfo(handle).pciDeviceId)
    memory = attempt(lambda: p.nvmlDeviceGetMemoryInfo(handle).total / 2**20)
    power = attempt(lambda: p.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
    facts = {
        "pci_device_id": f"{pci:#010x}" if isinstance(pci, int) else pci,
        "memory_total_mib": memory,
        "power_limit_w": power,
    }
    if not isinstance(pci, int):
        return {**facts, "sku_id": None, "evidence": f"no PCI device id: {pci['unavailable']}"}
    found = catalogue.identify(
        pci, memory if isinstance(memory, float) else None, power if isinstance(power, float) else None
    )
    return {**facts, "sku_id": found.sku_id, "evidence": found.evidence}


def own_pids(snapshot: dict[str, Any], allocated_mib: float) -> tuple[list[int], str]:
    """Which NVML-listed pids are this probe: our pid, or (in another pid namespace) our allocation."""
    procs = snapshot.get("processes")
    if not isinstance(procs, list):
        return [os.getpid()], "NVML process list unavailable; assumed our own pid"
    if any(p["pid"] == os.getpid() for p in procs):
        return [os.getpid()], "our pid is visible to NVML"
    big = [
        p["pid"]
        for p in procs
        if isinstance(p.get("used_memory_mib"), (int, float)) and p["used_memory_mib"] >= 0.9 * allocated_mib
    ]
    if len(big) == 1:
        return big, (
            f"our pid {os.getpid()} is not in NVML's list (another pid namespace); pid {big[0]} "
            f"holds at least 90% of our {allocated_mib:.0f} MiB allocation"
        )
    return [os.getpid()], (
        f"our pid {os.getpid()} is not in NVML's list and no single process holds our "
        "allocation: every listed process counts as another"
    )


# --- reference: published peak and known-good -------------------------------------------------


def reference(
    device: str, identity: dict[str, Any] | None, spec_gbps: float | None, compare_sku: str | None, kernel: str
) -> dict[str, Any]:
    ref: dict[str, Any]
    if device == "cpu":
        ref = {
            "sku_id": None,
            "identification": "device=cpu: the GPU catalogue has no reference for host memory",
            "known_good": None,
            "known_good_gbps": None,
            "comparable": False,
            "why": "device=cpu: the catalogue has no reference for host memory",
        }
    else:
        sku_id = identity["sku_id"] if identity else None
        ref = {
            "sku_id": sku_id,
            "identification": identity["evidence"] if identity else "NVML unavailable: the SKU cannot be identified",
            "known_good": None,
            "known_good_gbps": None,
        }
        ok, why = catalogue.comparable(sku_id, compare_sku or sku_id)
        sku = catalogue.by_id(sku_id) if ok and sku_id is not None else None
        entry = catalogue.primary_known_good(sku, "hbm_bandwidth", kernel=kernel) if sku else None
        if ok and entry is None:
            ok, why = False, f"{sku_id} has no primary known-good result for the {kernel} kernel"
        ref.update(comparable=ok, why=why, known_good=entry, known_good_gbps=entry["value"] if entry else None)
    if spec_gbps is not None:
        ref.update(spec_gbps=spec_gbps, spec_source="--spec-gbps")
    elif ref["sku_id"] and (sku := catalogue.by_id(ref["sku_id"])):
        published = sku["published"]
        ref.update(spec_gbps=published["memory_bandwidth_gbps"], spec_source=f"catalogue: {published['source']}")
    else:
        ref.update(spec_gbps=None, spec_source="none: no --spec-gbps and no catalogue SKU")
    return ref
