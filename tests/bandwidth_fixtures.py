"""Real recorded data for the bandwidth tests, read from tests/fixtures (see fixtures/README.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.probes.nvml import decode_clock_event_reasons

FIXTURES = Path(__file__).resolve().parent / "fixtures"
H200 = FIXTURES / "h200"

# nvidia-smi -q "Clocks Event Reasons" labels -> NVML bit names (nvml.h nvmlClocksEventReason*)
SMI_REASONS = {
    "Idle": 0x1,
    "Applications Clocks Setting": 0x2,
    "SW Power Cap": 0x4,
    "HW Slowdown": 0x8,
    "Sync Boost": 0x10,
    "SW Thermal Slowdown": 0x20,
    "HW Thermal Slowdown": 0x40,
    "HW Power Brake Slowdown": 0x80,
    "Display Clock Setting": 0x100,
}


def cpu_sweep() -> dict:
    return json.loads((FIXTURES / "bandwidth-cpu-sweep.json").read_text())


def h200_copy_sweep() -> list[tuple[float, float]]:
    """(size MiB, GB/s) of the torch copy sweep in h200-baseline.md's bandwidth table."""
    text = (H200 / "h200-baseline.md").read_text()
    rows = [
        line for line in text.splitlines() if line.startswith("| torch `b.copy_(a)`") or line.startswith("| same |")
    ]
    points = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        sizes = re.findall(r"(\d+)", cells[1])
        unit = 1024 if "GiB" in cells[1] else 1
        values = re.findall(r"(\d+) GB/s|(\d+)(?= /)", cells[2])
        values = [int(a or b) for a, b in values]
        points += [(float(s) * unit, float(v)) for s, v in zip(sizes, values, strict=True)]
    return points


def sample_from_nvml_fields(name: str) -> dict:
    """A harness.probes.nvml.sample()-shaped dict from an nvml-fields capture."""
    fields = json.loads((H200 / name).read_text())
    return {
        "at": "2026-11-29T14:22:05.000000Z",
        "sm_clock_mhz": fields["clock_sm"],
        "memory_clock_mhz": fields["clock_mem"],
        "power_w": fields["power_mw"] / 1000.0,
        "temperature_c": fields["temp"],
        "clock_event_reasons_mask": fields["throttle"],
        "clock_event_reasons": decode_clock_event_reasons(fields["throttle"]),
        "processes": [
            {
                "pid": p["pid"],
                "kind": "compute",
                "name": {"unavailable": "not captured"},
                "used_memory_mib": round(p["usedGpuMemory"] / 2**20, 1),
            }
            for p in fields["procs"]
        ],
    }


def sample_from_smi_q(name: str) -> dict:
    """The same shape from `nvidia-smi -q` text (clocks, power, temperature, reasons, processes)."""
    text = (H200 / name).read_text()

    def value(label: str, after: str | None = None) -> str:
        start = text.index(after) if after else 0
        return re.search(rf"^\s*{re.escape(label)}\s*:\s*(.+)$", text[start:], re.M).group(1).strip()

    reasons_block = text[text.index("Clocks Event Reasons\n") : text.index("Clocks Event Reasons Counters")]
    mask = sum(
        bit
        for label, bit in SMI_REASONS.items()
        if re.search(rf"^\s*{re.escape(label)}\s*:\s*Active", reasons_block, re.M)
    )
    pids = re.findall(
        r"Process ID\s*:\s*(\d+)\s*\n\s*Type\s*:\s*\w+\s*\n\s*Name\s*:\s*(\S+)\s*\n\s*"
        r"Used GPU Memory\s*:\s*(\d+) MiB",
        text,
    )
    return {
        "at": "2026-11-29T14:22:11.000000Z",
        "sm_clock_mhz": int(value("SM", "    Clocks\n").split()[0]),
        "memory_clock_mhz": int(value("Memory", "    Clocks\n").split()[0]),
        "power_w": float(value("Instantaneous Power Draw", "GPU Power Readings").split()[0]),
        "temperature_c": int(value("GPU Current Temp").split()[0]),
        "clock_event_reasons_mask": mask,
        "clock_event_reasons": decode_clock_event_reasons(mask),
        "processes": [
            {"pid": int(pid), "kind": "compute", "name": pname, "used_memory_mib": float(mib)}
            for pid, pname, mib in pids
        ],
    }
