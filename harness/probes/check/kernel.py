"""What the kernel says about NVIDIA GPUs, for `dossier check`: the driver's messages in the kernel
log (/dev/kmsg), the NVIDIA GPUs on the PCI bus (sysfs), the loaded kernel module's version
(/proc/driver/nvidia/version) and the uptime. Standard library only; nothing is run.

A file that cannot be read is {"unavailable": why} (the OS's own error), never an empty answer:
an unreadable kernel log is not a clean one.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

from harness.probes.contract import describe_exception, unavailable

KMSG = Path("/dev/kmsg")
PCI_DEVICES = Path("/sys/bus/pci/devices")
DRIVER_VERSION = Path("/proc/driver/nvidia/version")
UPTIME = Path("/proc/uptime")
NVIDIA_VENDOR = 0x10DE
GPU_CLASSES = (0x0300, 0x0302)  # PCI class: VGA controller, 3D controller (an NVSwitch is a bridge, 0x0680)
DRIVER_LINES = ("NVRM:", "Xid", "nvidia")  # the driver's own messages (NVRM), XIDs and SXIDs, the module's
MAX_LINES = 2000  # driver lines kept (the latest); the count of all is always kept
DMESG_LINE = re.compile(r"^\[\s*(\d+\.\d+)\]\s?(.*)$")
MODULE_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")


def uptime_s(path: Path = UPTIME) -> Any:
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError) as exc:
        return unavailable(f"{path}: {describe_exception(exc)}")


def kernel_module(path: Path = DRIVER_VERSION) -> Any:
    """The NVIDIA kernel module's version and banner line, or why there is none (not loaded)."""
    try:
        banner = path.read_text(errors="replace").splitlines()[0].strip()
    except (OSError, IndexError) as exc:
        return unavailable(f"{path}: {describe_exception(exc)} (the NVIDIA kernel module is not loaded?)")
    found = MODULE_VERSION.search(banner)
    return {"version": found.group(1) if found else unavailable(f"no version in {banner!r}"), "banner": banner}


def pci_gpus(root: Path = PCI_DEVICES) -> Any:
    """Every NVIDIA display or 3D controller on the PCI bus: address, device id, class."""
    try:
        addresses = sorted(os.listdir(root))
    except OSError as exc:
        return unavailable(f"{root}: {describe_exception(exc)}")
    found = []
    for address in addresses:
        try:
            vendor = int((root / address / "vendor").read_text(), 16)
            pci_class = int((root / address / "class").read_text(), 16)
            device = int((root / address / "device").read_text(), 16)
        except (OSError, ValueError):
            continue  # a device removed while listing, or a field this kernel lacks: not an NVIDIA GPU we can name
        if vendor == NVIDIA_VENDOR and pci_class >> 8 in GPU_CLASSES:
            found.append({"address": address, "device_id": f"{device:#06x}", "class": f"{pci_class:#08x}"})
    return found


def _kmsg_record(data: bytes) -> tuple[float, str] | None:
    """One /dev/kmsg record ("PRI,SEQ,MICROSECONDS,FLAGS;message\\n KEY=VALUE...") as (seconds, message)."""
    header, sep, body = data.decode("utf-8", "replace").partition(";")
    fields = header.split(",")
    if not sep or len(fields) < 3 or not fields[2].isdigit():
        return None
    return int(fields[2]) / 1e6, body.split("\n", 1)[0]


def kernel_log(path: Path = KMSG) -> Any:
    """The driver's lines in the kernel's ring buffer, each with its time since boot, read from /dev/kmsg
    without blocking (one record per read; EAGAIN ends the buffer). Reading it needs root or
    CAP_SYSLOG where kernel.dmesg_restrict is 1."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        hint = (
            " (root or CAP_SYSLOG needed when kernel.dmesg_restrict=1)"
            if exc.errno in (errno.EPERM, errno.EACCES)
            else ""
        )
        return unavailable(f"{path}: {describe_exception(exc)}{hint}")
    records, lines, overwritten = 0, [], 0
    try:
        while True:
            try:
                data = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # EPIPE: records were overwritten while reading; the next read goes on
                overwritten += 1
                continue
            except OSError as exc:
                return unavailable(f"{path}: {describe_exception(exc)}")
            if not data:
                break
            records += 1
            record = _kmsg_record(data)
            if record and any(word in record[1] for word in DRIVER_LINES):
                lines.append({"uptime_s": record[0], "text": record[1]})
    finally:
        os.close(fd)
    return {
        "source": str(path),
        "records_read": records,
        "driver_lines": len(lines),
        "overwritten_while_reading": overwritten,
        "lines": lines[-MAX_LINES:],
    }


def kernel_log_from_dmesg(text: str, source: str) -> dict[str, Any]:
    """The same record from `dmesg` output ("[  123.456789] NVRM: ..."), for a capture taken with it."""
    lines, records = [], 0
    for raw in text.splitlines():
        found = DMESG_LINE.match(raw)
        if not found:
            continue
        records += 1
        if any(word in found.group(2) for word in DRIVER_LINES):
            lines.append({"uptime_s": float(found.group(1)), "text": found.group(2)})
    return {
        "source": source,
        "records_read": records,
        "driver_lines": len(lines),
        "overwritten_while_reading": 0,
        "lines": lines[-MAX_LINES:],
    }
