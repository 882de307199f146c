"""The health facts `dossier fleet collect` compares across nodes (harness/registry/health.py
declares them as fleet metrics). Standard library only.

ECC: the health probe's fields (devices[i].ecc: mode_current, volatile_/aggregate_uncorrected_errors,
remapped_rows_pending/_failure) are found by the words in their names (a path with "ecc" and
"uncorrect" but not "remap"; "remap" with "pending" or "fail"), so a renamed field is still read,
summed over the node's devices. Under load: the narrowest PCIe link any device ran at, and the
lowest per-device median SM clock over the load window. A fact a document does not have is
{"unavailable": why}, never a default.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from typing import Any

from harness.analysis.health.diff import load_window_samples


def unavailable(why: str) -> dict[str, str]:
    return {"unavailable": why}


def _leaves(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict) and "unavailable" not in node:
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}".lower())
    else:
        yield path, node


def _device_counter(device: Mapping[str, Any], *words: str, without: str = "\0") -> int | None:
    """The largest count in a device's fields whose name has all `words` (aggregate >= volatile).

    A flag (NVML's row-remap "pending"/"failure" are booleans) counts as 0 or 1.
    """
    counts = [
        int(v)
        for path, v in _leaves(device)
        if all(w in path for w in words) and without not in path and isinstance(v, int)
    ]
    return max(counts) if counts else None


def _device_mode(device: Mapping[str, Any]) -> str | None:
    modes = [
        str(v)
        for path, v in _leaves(device)
        if "ecc" in path and "mode" in path and isinstance(v, (str, bool)) and "pending" not in path
    ]
    return modes[0] if modes else None


def gpu_devices(health: Any) -> list[dict[str, Any]] | dict[str, str]:
    """The document's GPU records, or why there are none."""
    if not isinstance(health, dict):
        return unavailable("health did not run on this node (no raw/health.json)")
    listed = health.get("devices", [])
    if isinstance(listed, dict) and "unavailable" in listed:
        return unavailable(f"health could not list devices: {listed['unavailable']}")
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    return devices or unavailable("health lists no GPU device (CPU-only node)")


def ecc_state(health: Any) -> dict[str, Any]:
    """A node's ECC state summed over its devices: mode and the counters that must be zero."""
    devices = gpu_devices(health)
    if isinstance(devices, dict):
        return devices
    per_device: list[dict[str, Any]] = [
        {
            "uncorrectable_errors": _device_counter(d, "ecc", "uncorrect", without="remap"),
            "pending_row_remaps": _device_counter(d, "remap", "pending"),
            "failed_row_remaps": _device_counter(d, "remap", "fail"),
            "mode": _device_mode(d),
        }
        for d in devices
    ]
    if all(d["uncorrectable_errors"] is None and d["mode"] is None for d in per_device):
        return unavailable("health reports no ECC field for any device (NVML did not answer)")
    state: dict[str, Any] = {}
    for counter in ("uncorrectable_errors", "pending_row_remaps", "failed_row_remaps"):
        counts = [d[counter] for d in per_device if d[counter] is not None]
        state[counter] = sum(counts) if counts else unavailable(f"no device reports {counter.replace('_', ' ')}")
    modes = sorted({d["mode"] for d in per_device if d["mode"] is not None})
    state["mode"] = ",".join(modes) if modes else unavailable("no device reports its ECC mode")
    return state


_LAST: list[Any] = [None, None]  # the last document read and its ECC state (four metrics read one document)


def ecc_figure(name: str):
    """A reader of one ECC figure (a counter or "mode") for the registry's fleet metrics."""

    def read(health: Mapping[str, Any]) -> Any:
        if _LAST[0] is not health:  # the document itself is kept, so its identity cannot be reused
            _LAST[:] = [health, ecc_state(health)]
        state = _LAST[1]
        return state if "unavailable" in state else state[name]

    return read


def pcie_width_under_load(active: Any) -> Any:
    """The narrowest PCIe link width any device ran at under load, as "xN"."""
    devices = gpu_devices(active)
    if isinstance(devices, dict):
        return devices
    widths = [d.get("pcie", {}).get("current_width") for d in devices if isinstance(d.get("pcie"), dict)]
    widths = [w for w in widths if isinstance(w, int) and not isinstance(w, bool)]
    return f"x{min(widths)}" if widths else unavailable("no device reports its PCIe link width under load")


def sm_clock_under_load_mhz(active: Any) -> Any:
    """The lowest per-device median SM clock over the load window's NVML samples."""
    devices = gpu_devices(active)
    if isinstance(devices, dict):
        return devices
    medians = []
    for device in devices:
        clocks = [s.get("sm_clock_mhz") for s in load_window_samples(active, device.get("nvml_index"))]
        samples = [s for s in clocks if isinstance(s, (int, float)) and not isinstance(s, bool)]
        if samples:
            medians.append(statistics.median(samples))
    return min(medians) if medians else unavailable("no SM clock sample was taken during the load")
