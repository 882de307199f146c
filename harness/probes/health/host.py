"""Host facts for health.json: who this machine is, read from the kernel's own files.

Standard library only. Every fact is a value or {"unavailable": reason}; a file that does
not exist on this host (no DMI table inside a container, no /proc on another OS) is named.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

from harness.probes.contract import attempt, unavailable

DMI_DIR = Path("/sys/class/dmi/id")
DMI_FIELDS = ("sys_vendor", "product_name", "board_vendor", "board_name", "bios_vendor", "bios_version")
# Words in DMI vendor/product strings that name a hypervisor (KVM/QEMU, Firecracker has no DMI).
HYPERVISOR_WORDS = (
    "kvm",
    "qemu",
    "vmware",
    "virtualbox",
    "xen",
    "hyper-v",
    "microsoft corporation",
    "amazon ec2",
    "google compute engine",
    "openstack",
    "bochs",
    "cloud hypervisor",
)


def read_text(path: Path | str) -> str:
    """A file's text, stripped; raises OSError when absent (attempt() turns that into a reason)."""
    return Path(path).read_text(errors="replace").strip()


def os_release(path: Path = Path("/etc/os-release")) -> Any:
    """PRETTY_NAME from os-release, e.g. 'Ubuntu 24.04.1 LTS'."""

    def parse() -> str:
        for line in read_text(path).splitlines():
            key, _, value = line.partition("=")
            if key == "PRETTY_NAME":
                return value.strip().strip('"')
        raise LookupError(f"no PRETTY_NAME in {path}")

    return attempt(parse)


def cpuinfo(path: Path = Path("/proc/cpuinfo")) -> tuple[Any, Any]:
    """(CPU model name, hypervisor flag present) from /proc/cpuinfo."""
    try:
        text = read_text(path)
    except OSError as exc:
        reason = unavailable(f"{type(exc).__name__}: {exc}")
        return reason, reason
    model: Any = unavailable(f"no 'model name' line in {path}")
    flags: set[str] | None = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not isinstance(model, str):
            model = value.strip()
        elif key in ("flags", "Features") and flags is None:
            flags = set(value.split())
    hypervisor = ("hypervisor" in flags) if flags is not None else unavailable(f"no flags line in {path}")
    return model, hypervisor


def memory_total_mib(path: Path = Path("/proc/meminfo")) -> Any:
    def parse() -> float:
        for line in read_text(path).splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 1)  # the kernel reports kB (KiB)
        raise LookupError(f"no MemTotal in {path}")

    return attempt(parse)


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id(path: Path = BOOT_ID) -> Any:
    """The kernel's boot id: which start of this machine the run was on (new at every boot; the host
    kernel's, also inside a container), or why it cannot be read."""

    def parse() -> str:
        text = read_text(path).strip()
        if not text:
            raise ValueError(f"{path} is empty")
        return text

    return attempt(parse)


def dmi(directory: Path = DMI_DIR) -> Any:
    """The DMI/SMBIOS identity strings, or why they cannot be read (containers often hide them)."""
    if not directory.is_dir():
        return unavailable(
            f"{directory} does not exist (no DMI table visible: container, or a VM without SMBIOS such as Firecracker)"
        )
    return {name: attempt(read_text, directory / name) for name in DMI_FIELDS}


def container_hints() -> dict[str, Any]:
    """Files and cgroup paths that say whether this process runs inside a container."""
    cgroup = attempt(lambda: read_text("/proc/self/cgroup").splitlines())
    words = ("docker", "containerd", "kubepods", "libpod", "lxc", "crio")
    named = sorted({w for w in words for line in (cgroup if isinstance(cgroup, list) else []) if w in line})
    return {
        "dockerenv": os.path.exists("/.dockerenv"),
        "containerenv": os.path.exists("/run/.containerenv"),
        "cgroup": cgroup,
        "cgroup_runtime_words": named,
        "pid_namespace": attempt(os.readlink, "/proc/self/ns/pid"),
    }


def virtualization_hints(hypervisor_flag: Any, dmi_facts: Any) -> dict[str, Any]:
    named: list[str] = []
    if isinstance(dmi_facts, dict):
        text = " ".join(v.lower() for v in dmi_facts.values() if isinstance(v, str))
        named = [w for w in HYPERVISOR_WORDS if w in text]
    return {"hypervisor_cpu_flag": hypervisor_flag, "dmi": dmi_facts, "dmi_hypervisor_words": named}


def usable_cpus() -> Any:
    return attempt(lambda: len(os.sched_getaffinity(0)))


def host_facts() -> dict[str, Any]:
    """Hostname, kernel, OS, CPU, memory, Python, and container/VM hints."""
    uname = platform.uname()
    model, hypervisor = cpuinfo()
    dmi_facts = dmi()
    return {
        "hostname": attempt(socket.gethostname),
        "kernel_release": uname.release or unavailable("platform.uname() gave no release"),
        "kernel_version": uname.version or unavailable("platform.uname() gave no version"),
        "boot_id": boot_id(),
        "machine": uname.machine or unavailable("platform.uname() gave no machine"),
        "os": os_release(),
        "cpu_model": model,
        "cpu_count_logical": os.cpu_count() or unavailable("os.cpu_count() returned None"),
        "cpu_count_usable": usable_cpus(),
        "memory_total_mib": memory_total_mib(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable or unavailable("sys.executable is empty"),
        "container": container_hints(),
        "virtualization": virtualization_hints(hypervisor, dmi_facts),
    }
