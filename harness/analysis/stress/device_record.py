"""One stressed device's raw record as the stress checks read it: one frozen view, checked once.

Built from a device record of stress.json (its `devices` list): how the worker failed, if it did,
and the parts the probe recorded as {"unavailable": reason} (the memory test, the NVML event set,
the telemetry, the error counters before and after), each kept with its reason, never a default.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.views import DocumentError, Unavailable, mapping

WHERE = "a stress.json device record"
PARTS = ("memory_test", "nvml_events", "telemetry", "counters_before", "counters_after")  # each may be unavailable


@dataclass(frozen=True)
class DeviceRecord:
    """The worker's failure (None: it completed every phase) and why each part it lacks is missing."""

    failure: str | None
    unread: Mapping[str, str]  # a part of PARTS recorded {"unavailable": reason} -> its reason

    @classmethod
    def from_record(cls, record: Any) -> DeviceRecord:
        """The view of one device record; refused (DocumentError) where a failure names no message."""
        record = mapping(record, WHERE)
        failure = record.get("failure")
        if failure and not (isinstance(failure, Mapping) and isinstance(failure.get("message"), str)):
            raise DocumentError(f"{WHERE}'s failure names no message: {failure!r}")
        unread = {}
        for part in PARTS:
            missing = Unavailable.of(record.get(part))
            if missing is not None:
                unread[part] = missing.reason
        return cls(failure=failure["message"] if failure else None, unread=unread)

    def why(self, part: str, otherwise: str) -> str:
        """Why PART is missing: the probe's reason where it gave one, else OTHERWISE."""
        return self.unread[part] if part in self.unread else otherwise
