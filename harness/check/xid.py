"""XID events in the NVIDIA driver's kernel-log lines, and which of them make a node sick.

The driver logs an XID as NVIDIA documents it (https://docs.nvidia.com/deploy/xid-errors/):

    NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.

(older drivers write the address without `PCI:`). The XIDs that fail a node are the catalogue's
`node_check.fatal_xids` (harness/data/gpus.json), each with its source: the list Azure's HPC
health checks drain on and the XIDs DCGM's health watch fails. Any other XID (13, 31, 43, 45:
errors of an application, which the driver survives) is listed but does not fail the node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.analysis import actions
from harness.analysis.actions import Recommendation

XID_LINE = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?\): (\d+),\s*(.*)"
)


@dataclass(frozen=True)
class XidEvent:
    """One XID line: when (seconds since boot), the GPU's PCI address as logged, the number, the rest."""

    uptime_s: float
    address: str
    xid: int
    text: str


def parse(lines: list[dict[str, Any]]) -> list[XidEvent]:
    """The XID events among a reading's kernel-log lines ({"uptime_s", "text"}), in log order."""
    events = []
    for line in lines:
        found = XID_LINE.search(line["text"])
        if found:
            events.append(
                XidEvent(float(line["uptime_s"]), found.group(1), int(found.group(2)), found.group(3).strip())
            )
    return events


def pci_key(address: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of '0000:00:06', '00000000:00:06.0' or '0000:00:06.0'; None if unreadable."""
    parts = address.split(".")[0].split(":")
    if len(parts) != 3:
        return None
    try:
        return int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None


def fatal() -> dict[int, dict[str, Any]]:
    """XID number -> its catalogue entry (what it means, which sources treat it as fatal)."""
    return {entry["xid"]: entry for entry in catalogue.node_check_rules()["fatal_xids"]}


def recommendation(number: int) -> Recommendation:
    """What to do after fatal XID NUMBER: NVIDIA's immediate action for it, in this project's words
    (the catalogue's node_check `actions`), with its sources."""
    entry = fatal()[number]
    bucket = entry["nvidia_immediate_action"]
    mapped = catalogue.node_check_rules()["actions"][bucket]
    return Recommendation(
        actions.parse(mapped["action"]),
        f"xid.{number}",
        f"XID {number} ({entry['what']}): {mapped['why']} (NVIDIA's immediate action {bucket}; fatal for "
        f"{', '.join(entry['sources'])}: the catalogue's node_check)",
    )
