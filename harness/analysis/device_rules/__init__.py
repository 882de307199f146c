"""The rules for a GPU's NVML device facts, each defined once: `dossier health`'s contracts,
`dossier check`'s findings and `dossier accept`'s criteria all apply these (issue 36).

Standard library only. A rule is a pure function of one device record as harness/probes/devices.py
reads it (a health.json device and a node reading's device are the same record), and the caller
chooses which rules and which thresholds (a profile's expected mode, the catalogue's bounds, whether
a link may be idle); no caller restates a rule. A rule gives an Outcome: what it found, in order,
each item one of

- Problem: the rule is broken, in words, with the Recommendation (harness.analysis.actions) that
  says what to do and why;
- Unread: a field it needs is `{"unavailable": reason}` (each caller decides what an unread field
  means: health.json's contracts, check's NotSupported/GpuIsLost/other rule, acceptance's
  incomplete);
- Caveat: the reading cannot tell (an idle link runs below its generation to save power);

and `unsupported`: why the device has no such feature at all (ECC or row remapping not readable,
no NVLink), so that a caller can say SKIP rather than judge it. The words of each Problem are the
ones health.json's contracts record (signed bundles keep them), so the three commands say the same.
"""

from harness.analysis.device_rules.links import (
    GENERATION_LOW,
    NARROWER,
    NVLINK_DOWN,
    PCIE_FIELDS,
    SLOT_CAPS,
    idle,
    nvlink,
    pcie_link,
    pcie_minimum,
)
from harness.analysis.device_rules.memory import ECC_UNCORRECTABLE, ecc, retired_pages, row_remaps
from harness.analysis.device_rules.outcome import Caveat, Item, Outcome, Problem, Unread, problem
from harness.analysis.device_rules.settings import (
    FOREIGN_PROCESS,
    SLOWDOWN,
    application_clocks,
    driver_action,
    driver_said,
    hardware_slowdown,
    mode,
    power_limit,
    processes,
)

__all__ = [
    "ECC_UNCORRECTABLE",
    "FOREIGN_PROCESS",
    "GENERATION_LOW",
    "NARROWER",
    "NVLINK_DOWN",
    "SLOT_CAPS",
    "SLOWDOWN",
    "PCIE_FIELDS",
    "Caveat",
    "Item",
    "Outcome",
    "Problem",
    "Unread",
    "application_clocks",
    "driver_action",
    "driver_said",
    "ecc",
    "hardware_slowdown",
    "idle",
    "mode",
    "nvlink",
    "pcie_link",
    "pcie_minimum",
    "power_limit",
    "problem",
    "processes",
    "retired_pages",
    "row_remaps",
]
